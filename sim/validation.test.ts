import { assertEquals } from "@std/assert";
import { validateAndPrune } from "./validation.ts";
import type { SchemaProps } from "./resources.ts";

const schema: SchemaProps = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      required: ["size"],
      properties: {
        size: { type: "integer", minimum: 1 },
        mode: { type: "string", enum: ["fast", "slow"] },
        budget: { "x-kubernetes-int-or-string": true },
        template: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
      },
    },
  },
};

Deno.test("validation: types, required, enum, minimum, int-or-string", () => {
  const fields = (value: unknown) => validateAndPrune(value, schema).map((c) => c.field);
  assertEquals(fields({ spec: { size: 2, mode: "fast", budget: "10%" } }), []);
  assertEquals(fields({ spec: { size: 2, budget: 3 } }), []);
  assertEquals(fields({ spec: { mode: "medium", budget: true } }), [
    "spec.size",
    "spec.mode",
    "spec.budget",
  ]);
  assertEquals(fields({ spec: { size: 0 } }), ["spec.size"]);
  assertEquals(fields({ spec: { size: "2" } }), ["spec.size"]);
});

Deno.test("validation: unknown fields are pruned unless preserved", () => {
  const object = { spec: { size: 1, extra: true, template: { anything: 1 } } };
  validateAndPrune(object, schema);
  assertEquals(object, { spec: { size: 1, template: { anything: 1 } } });
});
