import { assertRejects } from "@std/assert";
import { UsageError } from "../lib/command.ts";
import { clusterNodeCommand, clusterUpCommand } from "./command.ts";

Deno.test("cluster-node rejects an unknown verb and a missing node", async () => {
  await assertRejects(
    () => clusterNodeCommand.run({ values: {}, positionals: ["unplug", "edge-1"] }),
    UsageError,
    "disconnect, reconnect, notready, ready",
  );
  await assertRejects(
    () => clusterNodeCommand.run({ values: {}, positionals: ["disconnect"] }),
    UsageError,
    "needs a node name",
  );
});

Deno.test("cluster-up rejects a node count that is not a positive whole number", async () => {
  for (const nodes of ["0", "many", "2.5"]) {
    await assertRejects(
      () => clusterUpCommand.run({ values: { nodes }, positionals: [] }),
      UsageError,
      "--nodes",
    );
  }
});
