/**
 * What the manifests' tests share: `kubectl kustomize` of a directory under manifests/, the
 * objects it renders, and the order a dry-run needs (namespace and CRDs first).
 */
import { assertEquals } from "@std/assert";
import { parseAllDocuments } from "yaml";

export const root = new URL("../", import.meta.url).pathname;

export async function kustomize(dir: string): Promise<string> {
  const out = await new Deno.Command("kubectl", {
    args: ["kustomize", `${root}manifests/${dir}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  return text;
}

export function kinds(yaml: string): string[] {
  return parseAllDocuments(yaml).map((doc) => {
    const object = doc.toJS() as { kind: string; metadata: { name: string } };
    return `${object.kind}/${object.metadata.name}`;
  }).sort();
}

/** The objects that must exist before the rest can be dry-run: namespace and CRDs. */
export function split(yaml: string): { first: string; rest: string } {
  const first: string[] = [];
  const rest: string[] = [];
  for (const doc of parseAllDocuments(yaml)) {
    const kind = (doc.toJS() as { kind: string }).kind;
    (kind === "Namespace" || kind === "CustomResourceDefinition" ? first : rest).push(String(doc));
  }
  return { first: first.join("---\n"), rest: rest.join("---\n") };
}

/** Stands in for Knative's CRD, which the simulator does not ship. */
export const APISERVERSOURCE_CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: apiserversources.sources.knative.dev
spec:
  group: sources.knative.dev
  names: { kind: ApiServerSource, plural: apiserversources, singular: apiserversource }
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;
