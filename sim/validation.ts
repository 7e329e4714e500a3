/**
 * Structural-schema validation of custom resources, the basics kube-apiserver checks: types,
 * required, enum, int-or-string, nullable, minimum/maximum, pattern; unknown fields are
 * pruned unless `x-kubernetes-preserve-unknown-fields` (their paths are added to `pruned`, for
 * `fieldValidation`). Returns causes as a 422 Status lists.
 */
import type { SchemaProps } from "./resources.ts";
import type { StatusCause } from "./status.ts";

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

/**
 * Validates `value` against `schema` in place: unknown fields are pruned (as the API server
 * does for structural schemas) and every violation is returned as a cause.
 */
export function validateAndPrune(
  value: unknown,
  schema: SchemaProps | undefined,
  path = "",
  pruned: string[] = [],
): StatusCause[] {
  if (!schema) return [];
  const causes: StatusCause[] = [];
  const field = path || "<root>";
  const fail = (reason: string, message: string) => causes.push({ reason, message, field });
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
      if (childSchema) causes.push(...validateAndPrune(child, childSchema, childPath, pruned));
      else if (
        !schema["x-kubernetes-preserve-unknown-fields"] && additional !== true && schema.properties
      ) {
        delete map[key];
        pruned.push(childPath);
      }
    }
  }
  return causes;
}
