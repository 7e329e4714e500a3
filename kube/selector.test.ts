import { assertEquals, assertThrows } from "@std/assert";
import { labelSelectorString } from "./selector.ts";

Deno.test("labelSelectorString writes matchLabels and every expression operator", () => {
  assertEquals(
    labelSelectorString({
      matchLabels: { app: "agent", tier: "edge" },
      matchExpressions: [
        { key: "zone", operator: "In", values: ["a", "b"] },
        { key: "arch", operator: "NotIn", values: ["arm"] },
        { key: "gpu", operator: "Exists" },
        { key: "legacy", operator: "DoesNotExist" },
      ],
    }),
    "app=agent,tier=edge,zone in (a,b),arch notin (arm),gpu,!legacy",
  );
  assertEquals(labelSelectorString(undefined), "");
});

Deno.test("labelSelectorString rejects an unknown operator", () => {
  assertThrows(
    () => labelSelectorString({ matchExpressions: [{ key: "k", operator: "Near" }] }),
    Error,
    "Near",
  );
});
