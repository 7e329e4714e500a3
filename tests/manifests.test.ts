/**
 * The kustomize base and the Knative overlay render with `kubectl kustomize` and pass a
 * server-side dry-run against the simulator: the API server validates every object.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { parseAllDocuments } from "yaml";
import { kubectl, withSim } from "./sim/helpers.ts";

const root = new URL("../", import.meta.url).pathname;

async function kustomize(dir: string): Promise<string> {
  const out = await new Deno.Command("kubectl", {
    args: ["kustomize", `${root}manifests/${dir}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  return text;
}

function kinds(yaml: string): string[] {
  return parseAllDocuments(yaml).map((doc) => {
    const object = doc.toJS() as { kind: string; metadata: { name: string } };
    return `${object.kind}/${object.metadata.name}`;
  }).sort();
}

/** The objects that must exist before the rest can be dry-run: namespace and CRDs. */
function split(yaml: string): { first: string; rest: string } {
  const first: string[] = [];
  const rest: string[] = [];
  for (const doc of parseAllDocuments(yaml)) {
    const kind = (doc.toJS() as { kind: string }).kind;
    (kind === "Namespace" || kind === "CustomResourceDefinition" ? first : rest).push(String(doc));
  }
  return { first: first.join("---\n"), rest: rest.join("---\n") };
}

/** Stands in for Knative's CRD, which the simulator does not ship. */
const APISERVERSOURCE_CRD = `
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

Deno.test("manifests: base renders the controller, relay, tick, RBAC and CRD", async () => {
  const rendered = kinds(await kustomize("base"));
  for (
    const expected of [
      "CronJob/edgeroll-tick",
      "CustomResourceDefinition/advanceddaemonsets.apps.edgeroll.dev",
      "Deployment/edgeroll-controller",
      "Deployment/edgeroll-relay",
      "Namespace/edgeroll-system",
      "Service/edgeroll-controller",
    ]
  ) assertEquals(rendered.includes(expected), true, `${expected} missing from ${rendered}`);
});

Deno.test("manifests: knative overlay swaps the relay for an ApiServerSource", async () => {
  const rendered = kinds(await kustomize("overlays/knative"));
  assertEquals(rendered.includes("Deployment/edgeroll-relay"), false);
  assertEquals(rendered.includes("ApiServerSource/edgeroll-events"), true);
});

for (const dir of ["base", "overlays/knative"]) {
  Deno.test(`manifests: ${dir} passes a server-side dry-run`, async () => {
    await withSim({ nodes: 1 }, async (sim) => {
      const { first, rest } = split(await kustomize(dir));
      const setup = await kubectl(sim, ["apply", "-f", "-"], first + "---\n" + APISERVERSOURCE_CRD);
      assertEquals(setup.code, 0, setup.stderr);
      const dry = await kubectl(sim, ["apply", "--dry-run=server", "-f", "-"], rest);
      assertEquals(dry.code, 0, dry.stderr);
      assertStringIncludes(
        dry.stdout,
        "deployment.apps/edgeroll-controller created (server dry run)",
      );
    });
  });
}
