/**
 * Structural-schema validation of custom resources, the basics kube-apiserver checks: types,
 * required, enum, int-or-string, nullable, minimum/maximum, pattern; unknown fields are
 * pruned unless `x-kubernetes-preserve-unknown-fields` (their paths are added to `pruned`, for
 * `fieldValidation`). Returns causes as a 422 Status lists.
 */
import type { SchemaProps } from "./resources.ts";
import type { StatusCause } from "./status.ts";
import { canonical } from "./canonical.ts";

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function typeMatches(expected: string, value: unknown): boolean {
  const actual = typeOf(value);
  return actual === expected || (expected === "number" && actual === "integer");
}

/** The one CEL rule sim evaluates: a transition rule that makes a field immutable. */
export const immutableRule = "self == oldSelf";

/** Paths and rules of every `x-kubernetes-validations` entry sim cannot evaluate. */
export function unsupportedRules(schema: SchemaProps | undefined, path: string): string[] {
  if (!schema) return [];
  const own = (schema["x-kubernetes-validations"] ?? [])
    .map((v, i) => ({ rule: v.rule, at: `${path}.x-kubernetes-validations[${i}].rule` }))
    .filter((v) => v.rule.replaceAll(" ", "") !== immutableRule.replaceAll(" ", ""))
    .map((v) => `${v.at}: "${v.rule}"`);
  const children = [
    ...Object.entries(schema.properties ?? {}).map(([k, v]) => [`${path}.properties.${k}`, v]),
    [`${path}.items`, schema.items],
    [`${path}.additionalProperties`, schema.additionalProperties],
  ] as [string, SchemaProps | boolean | undefined][];
  return [
    ...own,
    ...children.flatMap(([at, child]) =>
      typeof child === "object" ? unsupportedRules(child, at) : []
    ),
  ];
}

/** `type`'s word for a value in an Invalid message, as the API server writes it. */
function shownType(value: unknown): string {
  return typeOf(value) === "integer" ? "integer" : typeOf(value);
}

/**
 * Validates `value` against `schema` in place: unknown fields are pruned (as the API server
 * does for structural schemas) and every violation is returned as a cause. `old` is the stored
 * value at the same path on an update, for transition rules.
 */
export function validateAndPrune(
  value: unknown,
  schema: SchemaProps | undefined,
  path = "",
  pruned: string[] = [],
  old?: unknown,
): StatusCause[] {
  if (!schema) return [];
  const causes: StatusCause[] = [];
  const field = path || "<root>";
  const fail = (reason: string, message: string) => causes.push({ reason, message, field });
  // Transition rules run only where the field has an old value (an update that keeps it).
  for (const validation of schema["x-kubernetes-validations"] ?? []) {
    if (old !== undefined && canonical(value) !== canonical(old)) {
      fail(
        "FieldValueInvalid",
        `${field}: Invalid value: "${shownType(value)}": ${
          validation.message ?? `failed rule: ${validation.rule}`
        }`,
      );
    }
  }
  if (value === null) {
    if (!schema.nullable && schema.type) {
      fail(
        "FieldValueTypeInvalid",
        `${field}: Invalid value: "null": ${field} in body must be of type ${schema.type}: "null"`,
      );
    }
    return causes;
  }
  if (schema["x-kubernetes-int-or-string"]) {
    if (typeof value !== "string" && typeOf(value) !== "integer") {
      fail(
        "FieldValueTypeInvalid",
        `${field}: Invalid value: ${
          JSON.stringify(value)
        }: ${field} in body must be of type integer-or-string`,
      );
    }
    return causes;
  }
  if (schema.type && !typeMatches(schema.type, value)) {
    fail(
      "FieldValueTypeInvalid",
      `${field}: Invalid value: "${
        typeOf(value)
      }": ${field} in body must be of type ${schema.type}: "${typeOf(value)}"`,
    );
    return causes;
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    const allowed = schema.enum.map((e) => JSON.stringify(e)).join(", ");
    fail(
      "FieldValueNotSupported",
      `${field}: Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed}`,
    );
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) {
      fail(
        "FieldValueInvalid",
        `${field}: Invalid value: ${value}: ${field} in body should be greater than or equal to ${schema.minimum}`,
      );
    }
    if (schema.maximum !== undefined && value > schema.maximum) {
      fail(
        "FieldValueInvalid",
        `${field}: Invalid value: ${value}: ${field} in body should be less than or equal to ${schema.maximum}`,
      );
    }
  }
  if (typeof value === "string" && schema.pattern && !new RegExp(schema.pattern).test(value)) {
    fail(
      "FieldValueInvalid",
      `${field}: Invalid value: "${value}": ${field} in body should match '${schema.pattern}'`,
    );
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) =>
      causes.push(...validateAndPrune(item, schema.items, `${path}[${i}]`))
    );
  }
  if (typeOf(value) === "object") {
    const map = value as Record<string, unknown>;
    for (const name of schema.required ?? []) {
      if (!(name in map)) {
        const child = path ? `${path}.${name}` : name;
        causes.push({
          reason: "FieldValueRequired",
          message: `${child}: Required value`,
          field: child,
        });
      }
    }
    const additional = schema.additionalProperties;
    for (const [key, child] of Object.entries(map)) {
      const childPath = path ? `${path}.${key}` : key;
      const childSchema = schema.properties?.[key] ??
        (typeof additional === "object" ? additional : undefined);
      const oldChild = typeOf(old) === "object" ? (old as Record<string, unknown>)[key] : undefined;
      if (childSchema) {
        causes.push(...validateAndPrune(child, childSchema, childPath, pruned, oldChild));
      } else if (
        !schema["x-kubernetes-preserve-unknown-fields"] && additional !== true && schema.properties
      ) {
        delete map[key];
        pruned.push(childPath);
      }
    }
  }
  return causes;
}

/**
 * Sets the schema's `default`s of absent fields in `value`, in place, as kube-apiserver does when
 * it decodes a custom resource (before admission): a field set from its default is defaulted in
 * turn, so a default of `{}` takes its own fields' defaults. `null` is not absent, unless the
 * field is not nullable (then the default replaces it).
 */
export function applyDefaults(value: unknown, schema: SchemaProps | undefined): void {
  if (!schema || typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) applyDefaults(item, schema.items);
    return;
  }
  const map = value as Record<string, unknown>;
  for (const [key, child] of Object.entries(schema.properties ?? {})) {
    const absent = !(key in map) || (map[key] === null && !child.nullable);
    if (absent && child.default !== undefined) map[key] = structuredClone(child.default);
  }
  const additional = schema.additionalProperties;
  for (const [key, child] of Object.entries(map)) {
    const childSchema = schema.properties?.[key] ??
      (typeof additional === "object" ? additional : undefined);
    applyDefaults(child, childSchema);
  }
}
