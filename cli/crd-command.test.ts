import { assertEquals } from "@std/assert";
import { parse } from "yaml";
import {
  chartCrdFiles,
  crdFileName,
  kruiseCrdFileName,
  renderCrdYaml,
  renderKruiseCrdYaml,
  renderRolloutStatusCrdYaml,
  rolloutStatusCrdFileName,
} from "./crd-command.ts";
import { convertKruiseDaemonSet } from "../api/kruise.ts";
import { kruiseExamples, migrateFromKruise } from "../api/testdata/kruise-examples.ts";

type Schema = { [key: string]: unknown };

Deno.test("the committed CRDs equal a fresh generation (run `deno task crd` after a schema change)", async () => {
  for (
    const [name, render] of [
      [crdFileName, renderCrdYaml],
      [rolloutStatusCrdFileName, renderRolloutStatusCrdYaml],
      [kruiseCrdFileName, renderKruiseCrdYaml],
    ] as const
  ) {
    const committed = await Deno.readTextFile(new URL(`../manifests/crd/${name}`, import.meta.url));
    assertEquals(committed, render(), name);
  }
  for (const [name, text] of chartCrdFiles()) {
    const committed = await Deno.readTextFile(
      new URL(`../charts/edgeroll/${name}`, import.meta.url),
    );
    assertEquals(committed, text, `charts/edgeroll/${name}`);
  }
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

function openApiSchema(yaml = renderCrdYaml(), version = 0): Schema {
  const crd = parse(yaml);
  return crd.spec.versions[version].schema.openAPIV3Schema;
}

/** The Kruise CRD's schema of `version` (v1beta1, the stored one, or v1alpha1). */
function kruiseSchema(version: "v1beta1" | "v1alpha1"): Schema {
  const crd = parse(renderKruiseCrdYaml());
  const index = crd.spec.versions.findIndex((v: { name: string }) => v.name === version);
  return openApiSchema(renderKruiseCrdYaml(), index);
}

Deno.test("the generated schemas are structural", () => {
  assertEquals(nonStructuralKeys(openApiSchema(), ""), []);
  assertEquals(nonStructuralKeys(openApiSchema(renderRolloutStatusCrdYaml()), ""), []);
  assertEquals(nonStructuralKeys(kruiseSchema("v1beta1"), ""), []);
  assertEquals(nonStructuralKeys(kruiseSchema("v1alpha1"), ""), []);
});

Deno.test("the seeds' Kruise DaemonSets keep every field under the compatibility CRD, as written and as stored", () => {
  for (const [name, example] of Object.entries(kruiseExamples)) {
    assertEquals([name, prunedFields(example, kruiseSchema("v1alpha1"), "")], [name, []]);
    const stored = convertKruiseDaemonSet(example, "v1beta1");
    assertEquals([name, prunedFields(stored, kruiseSchema("v1beta1"), "")], [name, []]);
  }
  // The status edgeroll writes, under Kruise's v1beta1 names, is kept too.
  const status = { updateRevision: "abc", numberReady: 1, expectations: [], nextCheckAt: "x" };
  assertEquals(prunedFields({ status }, kruiseSchema("v1beta1"), ""), []);
  assertEquals(prunedFields({ status }, kruiseSchema("v1alpha1"), ""), [".status.updateRevision"]);
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
    assertEquals(
      await Deno.readTextFile(`${dir}/${rolloutStatusCrdFileName}`),
      renderRolloutStatusCrdYaml(),
    );
    assertEquals(await Deno.readTextFile(`${dir}/${kruiseCrdFileName}`), renderKruiseCrdYaml());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
