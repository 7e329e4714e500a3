import { assertEquals } from "@std/assert";
import { parse } from "yaml";
import { crdFileName, renderCrdYaml } from "./crd-command.ts";
import { kruiseExamples, migrateFromKruise } from "../api/testdata/kruise-examples.ts";

type Schema = { [key: string]: unknown };

Deno.test("the committed CRD equals a fresh generation (run `deno task crd` after a schema change)", async () => {
  const committed = await Deno.readTextFile(
    new URL(`../manifests/crd/${crdFileName}`, import.meta.url),
  );
  assertEquals(committed, renderCrdYaml());
});

/** Paths of keys a structural CRD schema must not contain. */
function nonStructuralKeys(schema: Schema, path: string): string[] {
  const found: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (["anyOf", "oneOf", "allOf", "const", "$schema", "propertyNames"].includes(key)) {
      found.push(`${path}.${key}`);
    }
    if (key === "additionalProperties" && value === false) found.push(`${path}.${key}`);
    if (value && typeof value === "object" && !Array.isArray(value)) {
      found.push(...nonStructuralKeys(value as Schema, `${path}.${key}`));
    }
  }
  return found;
}

/** Fields of `value` the API server would prune or reject under `schema`. */
function prunedFields(value: unknown, schema: Schema, path: string): string[] {
  if (schema["x-kubernetes-preserve-unknown-fields"]) return [];
  if (schema["x-kubernetes-int-or-string"]) {
    return typeof value === "number" || typeof value === "string"
      ? []
      : [`${path} (int-or-string)`];
  }
  if (Array.isArray(value)) {
    const items = schema.items as Schema | undefined;
    return items ? value.flatMap((v, i) => prunedFields(v, items, `${path}[${i}]`)) : [];
  }
  if (value && typeof value === "object") {
    const properties = schema.properties as Record<string, Schema> | undefined;
    const additional = schema.additionalProperties as Schema | undefined;
    if (!properties && !additional) return schema.type === "object" ? [] : [`${path} (type)`];
    return Object.entries(value).flatMap(([key, v]) => {
      const child = properties?.[key] ?? additional;
      return child ? prunedFields(v, child, `${path}.${key}`) : [`${path}.${key}`];
    });
  }
  return [];
}

function openApiSchema(): Schema {
  const crd = parse(renderCrdYaml());
  return crd.spec.versions[0].schema.openAPIV3Schema;
}

Deno.test("the generated schema is structural", () => {
  assertEquals(nonStructuralKeys(openApiSchema(), ""), []);
});

Deno.test("the seeds' Kruise DaemonSets keep every field under the CRD after changing apiVersion and kind", () => {
  const schema = openApiSchema();
  for (const [name, example] of Object.entries(kruiseExamples)) {
    assertEquals([name, prunedFields(migrateFromKruise(example), schema, "")], [name, []]);
  }
});

Deno.test("a field the CRD does not know would be pruned (the checker can fail)", () => {
  const bad = migrateFromKruise(kruiseExamples.partition);
  (bad.spec as Schema).replicas = 3;
  assertEquals(prunedFields(bad, openApiSchema(), ""), [".spec.replicas"]);
});

Deno.test("`edgeroll crd --out DIR` writes the same YAML under the crd task's permissions", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const main = new URL("../main.ts", import.meta.url).pathname;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", `--allow-write=${dir}`, "--allow-env", main, "crd", "--out", dir],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(new TextDecoder().decode(output.stderr), "");
    assertEquals(output.code, 0);
    assertEquals(await Deno.readTextFile(`${dir}/${crdFileName}`), renderCrdYaml());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
