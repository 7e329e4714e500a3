import { assertEquals } from "@std/assert";
import { NodeChanges } from "./keys.ts";

Deno.test("node names sent in events are remembered up to a bound, the least recently seen first", () => {
  const nodes = new NodeChanges();
  const node = (name: string, zone = "a") => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
  });
  assertEquals(nodes.changed(node("edge-0"), false), true);
  assertEquals(nodes.changed(node("edge-0"), false), false, "a heartbeat moves nothing");
  for (let i = 1; i <= NodeChanges.maxRemembered + 10; i++) nodes.changed(node(`n-${i}`), false);
  assertEquals(nodes.size, NodeChanges.maxRemembered);
  // edge-0 was the least recently seen: forgotten, its next event counts as a change once.
  assertEquals(nodes.changed(node("edge-0"), false), true);
  assertEquals(nodes.changed(node("edge-0", "b"), false), true);
  assertEquals(nodes.changed(node("edge-0", "b"), false), false);
});
