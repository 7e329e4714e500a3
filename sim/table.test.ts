import { assertEquals } from "@std/assert";
import { evaluateJsonPath, humanAge } from "./table.ts";

Deno.test("table: ages read like kubectl's", () => {
  const s = 1000;
  assertEquals(
    [
      45 * s,
      192 * s,
      17 * 60 * s,
      (5 * 3600 + 180) * s,
      50 * 3600 * s,
      40 * 86400 * s,
      800 * 86400 * s,
    ].map(humanAge),
    ["45s", "3m12s", "17m", "5h3m", "2d2h", "40d", "2y"],
  );
});

Deno.test("table: printer-column JSONPath subset", () => {
  const object = {
    status: { conditions: [{ type: "A", status: "False" }, { type: "Ready", status: "True" }] },
    spec: { l: [7, 8] },
  };
  assertEquals(evaluateJsonPath(object, '.status.conditions[?(@.type=="Ready")].status'), "True");
  assertEquals(evaluateJsonPath(object, ".spec.l[1]"), 8);
  assertEquals(evaluateJsonPath(object, ".spec.missing.deeper"), undefined);
  // As kube-apiserver's table convertor: a wildcard prints the first result only.
  assertEquals(evaluateJsonPath(object, ".spec.l[*]"), object.spec.l[0]);
});
