/**
 * The Helm chart (charts/edgeroll) with Helm itself, built from its Go module (cluster/build.sh
 * --helm): `helm lint` passes for each way it is meant to be installed; each renders the very
 * objects of the kustomize directory it stands for; a bad value stops the render with its name;
 * and the rendered objects pass a server-side dry-run on cluster/, the real control plane.
 * `deno task test:helm`.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { parseAllDocuments } from "yaml";
import { APISERVERSOURCE_CRD, kustomize, root, split } from "../kustomize.ts";
import { withTarget } from "../e2e/target.ts";
import { Kube } from "../e2e/kube.ts";
import { runKubectl, runPiped as run } from "../../cluster/kubectl.ts";

const helm = `${root}cluster/bin/helm`;
const chart = `${root}charts/edgeroll`;

/** Each way to install, as chart values and as the kustomize directories it replaces. */
const installs: { name: string; set: string[]; kustomize: string[] }[] = [
  { name: "default", set: [], kustomize: ["base"] },
  {
    name: "Kruise compatibility",
    set: ["kruise.enabled=true"],
    kustomize: ["overlays/kruise-compat"],
  },
  {
    name: "the relay",
    set: ["events.source=relay"],
    kustomize: ["overlays/relay"],
  },
  {
    name: "Knative's ApiServerSource",
    set: ["events.source=knative"],
    kustomize: ["overlays/knative"],
  },
  {
    name: "with the edge agent",
    set: ["edgeAgent.enabled=true"],
    kustomize: ["base", "edge-agent"],
  },
];

const setArgs = (set: string[]) => set.flatMap((s) => ["--set", s]);

async function render(set: string[]): Promise<string> {
  const out = await run(helm, [
    "template",
    "edgeroll",
    chart,
    "--namespace",
    "edgeroll-system",
    "--include-crds",
    ...setArgs(set),
  ]);
  assertEquals(out.code, 0, out.stderr);
  return out.stdout;
}

type KubeObject = {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

/**
 * Objects by kind, namespace and name, without what only Helm adds (its two labels). The
 * kustomize base's Namespace is left out: Helm installs into a namespace it is given
 * (`--create-namespace`), and a chart that also made it would clash with that.
 */
function objects(yaml: string): Map<string, KubeObject> {
  const byKey = new Map<string, KubeObject>();
  for (const doc of parseAllDocuments(yaml)) {
    const object = doc.toJS() as KubeObject | null;
    if (!object || object.kind === "Namespace") continue;
    const labels = { ...object.metadata.labels };
    delete labels["app.kubernetes.io/managed-by"];
    delete labels["helm.sh/chart"];
    object.metadata.labels = labels;
    byKey.set(`${object.kind}/${object.metadata.namespace ?? ""}/${object.metadata.name}`, object);
  }
  return byKey;
}

Deno.test("helm lint passes for each way to install the chart", async () => {
  for (const { name, set } of installs) {
    const out = await run(helm, ["lint", chart, "--strict", ...setArgs(set)]);
    assertEquals(out.code, 0, `${name}: ${out.stdout}${out.stderr}`);
    assertStringIncludes(out.stdout, "1 chart(s) linted, 0 chart(s) failed");
  }
});

Deno.test("the chart renders the same objects as the kustomize directory each install stands for", async () => {
  for (const install of installs) {
    const fromChart = objects(await render(install.set));
    const fromKustomize = objects(
      (await Promise.all(install.kustomize.map(kustomize))).join("\n---\n"),
    );
    assertEquals([...fromChart.keys()].sort(), [...fromKustomize.keys()].sort(), install.name);
    for (const [key, object] of fromKustomize) {
      assertEquals(fromChart.get(key), object, `${install.name}: ${key}`);
    }
  }
});

Deno.test("a value the chart does not know how to install stops the render and names it", async () => {
  const out = await run(helm, ["template", "edgeroll", chart, "--set", "events.source=kafka"]);
  assertEquals(out.code, 1);
  assertStringIncludes(out.stderr, 'events.source must be watch, relay or knative, not "kafka"');
});

Deno.test({
  name: "the rendered chart passes a server-side dry-run on the real control plane",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withTarget("cluster", { nodes: 1 }, async (target) => {
      const kube = new Kube(target.kubeconfigPath);
      await kube.createNamespace("edgeroll-system");
      for (const install of installs) {
        const { first, rest } = split(await render(install.set));
        // The CRDs (and Knative's, which cluster/ does not run) exist before the objects.
        await kube.run(
          ["apply", "--server-side", "-f", "-"],
          [first, APISERVERSOURCE_CRD].join("---\n"),
        );
        await kube.run(["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"]);
        const dry = await runKubectl(target.kubeconfigPath, [
          "apply",
          "--dry-run=server",
          "-f",
          "-",
        ], rest);
        assertEquals(dry.code, 0, `${install.name}: ${dry.stderr}`);
        const accepted = dry.stdout.trim().split("\n");
        const objects = parseAllDocuments(rest).filter((doc) => doc.toJS() !== null);
        assertEquals(accepted.length, objects.length, dry.stdout);
        assertEquals(accepted.every((line) => line.endsWith("(server dry run)")), true, dry.stdout);
      }
    });
  },
});
