import { assertEquals } from "@std/assert";
import { applyDefaults, unsupportedRules, validateAndPrune } from "./validation.ts";
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

Deno.test("validation: the transition rule self == oldSelf refuses a changed value on update only", () => {
  const immutable: SchemaProps = {
    type: "object",
    properties: {
      selector: {
        type: "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "field is immutable" }],
      },
    },
  };
  const old = { selector: { matchLabels: { app: "a", tier: "edge" } } };
  const messages = (value: unknown, before?: unknown) =>
    validateAndPrune(value, immutable, "spec", [], before).map((c) => c.message);
  assertEquals(messages({ selector: { matchLabels: { app: "b" } } }), [], "a create has no old");
  // The same selector with its keys in another order is the same value.
  assertEquals(messages({ selector: { matchLabels: { tier: "edge", app: "a" } } }, old), []);
  assertEquals(messages({ selector: { matchLabels: { app: "b" } } }, old), [
    'spec.selector: Invalid value: "object": field is immutable',
  ]);
});

Deno.test("validation: a CEL rule sim cannot evaluate is listed, never ignored", () => {
  const rules = unsupportedRules({
    type: "object",
    properties: {
      a: { type: "string", "x-kubernetes-validations": [{ rule: "self == oldSelf" }] },
      b: {
        type: "array",
        items: { type: "integer", "x-kubernetes-validations": [{ rule: "self > 0" }] },
      },
    },
  }, "schema");
  assertEquals(rules, ['schema.properties.b.items.x-kubernetes-validations[0].rule: "self > 0"']);
});

Deno.test("validation: schema defaults fill absent fields, a defaulted object takes its own fields' defaults", () => {
  const defaulted: SchemaProps = {
    type: "object",
    properties: {
      strategy: {
        type: "object",
        default: {},
        properties: {
          type: { type: "string", default: "RollingUpdate" },
          rolling: {
            type: "object",
            default: {},
            properties: {
              kind: { type: "string", default: "Standard" },
              partition: { type: "integer" },
            },
          },
        },
      },
      items: {
        type: "array",
        items: { type: "object", properties: { n: { type: "integer", default: 1 } } },
      },
    },
  };
  const empty: Record<string, unknown> = { items: [{}, { n: 5 }] };
  applyDefaults(empty, defaulted);
  assertEquals(empty, {
    items: [{ n: 1 }, { n: 5 }],
    strategy: { type: "RollingUpdate", rolling: { kind: "Standard" } },
  });
  const given: Record<string, unknown> = {
    strategy: { type: "OnDelete", rolling: { partition: 2 } },
  };
  applyDefaults(given, defaulted);
  assertEquals(given.strategy, { type: "OnDelete", rolling: { kind: "Standard", partition: 2 } });
});
