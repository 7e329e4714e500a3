/**
 * `edgeroll history|undo|pause|resume` as a user runs them (main.ts in its own process, and as
 * `kubectl edgeroll …` through bin/kubectl-edgeroll on PATH), against the simulator over HTTP:
 * the revisions listed with what changed, the template rolled back, a set paused and resumed, a
 * stop by the failure budget acknowledged (ADR 0035).
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { advancedDaemonSetCrd, kruiseDaemonSetCrd, rolloutStatusCrd } from "../api/crd.ts";
import { kruiseApiVersion, kruiseGroup, kruiseKind, kruisePlural } from "../api/kruise.ts";
import { startSim } from "../sim/start.ts";
import type { Sim } from "../sim/start.ts";

const root = new URL("../", import.meta.url).pathname;
const ads = "advanceddaemonsets.apps.edgeroll.dev";

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    env: { ...env, PATH: `${root}bin:${Deno.env.get("PATH")}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

const edgeroll = (sim: Sim, args: string[]) =>
  run(Deno.execPath(), [
    "run",
    "-A",
    `${root}main.ts`,
    ...args,
    `--kubeconfig=${sim.kubeconfigPath}`,
  ]);
const kubectlEdgeroll = (sim: Sim, args: string[]) =>
  run("kubectl", ["edgeroll", ...args], { KUBECONFIG: sim.kubeconfigPath });

const template = (image: string) => ({
  metadata: { labels: { app: "agent" } },
  spec: { containers: [{ name: "agent", image }] },
});

/** How a kind of custom set is stored: its CRD, resource, version and where its hash is. */
interface CustomKind {
  crd: unknown;
  resource: string;
  apiVersion: string;
  kind: string;
  status: (hash: string) => Record<string, string>;
}

const advancedDaemonSets: CustomKind = {
  crd: advancedDaemonSetCrd(),
  resource: ads,
  apiVersion: "apps.edgeroll.dev/v1alpha1",
  kind: "AdvancedDaemonSet",
  status: (hash) => ({ daemonSetHash: hash }),
};

/** Kruise's DaemonSet at its storage version (no conversion asked of the webhook). */
const kruiseDaemonSets: CustomKind = {
  crd: kruiseDaemonSetCrd({ url: "https://127.0.0.1:9/" }),
  resource: `${kruisePlural}.${kruiseGroup}`,
  apiVersion: kruiseApiVersion,
  kind: kruiseKind,
  status: (hash) => ({ updateRevision: hash }),
};

/** A set on v2 with the revisions of v1 and v2, v2 current. */
function seed(sim: Sim, kind = advancedDaemonSets): { uid: string } {
  sim.store.create("customresourcedefinitions.apiextensions.k8s.io", kind.crd as never);
  const set = sim.store.create(kind.resource, {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: { name: "agent", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: template("agent:v2"),
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
    },
  } as never);
  const uid = set.metadata.uid!;
  for (const [n, hash, image] of [[1, "h1", "agent:v1"], [2, "h2", "agent:v2"]] as const) {
    sim.store.create("controllerrevisions.apps", {
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: {
        name: `agent-${hash}`,
        namespace: "default",
        labels: { app: "agent", "controller-revision-hash": hash },
        ownerReferences: [{
          apiVersion: kind.apiVersion,
          kind: kind.kind,
          name: "agent",
          uid,
          controller: true,
        }],
      },
      data: { spec: { template: { ...template(image), $patch: "replace" } } },
      revision: n,
    } as never);
  }
  const stored = sim.store.get(kind.resource, "default", "agent")!;
  sim.store.update(kind.resource, { ...stored, status: kind.status("h2") } as never);
  return { uid };
}

const spec = (sim: Sim, resource = ads) =>
  sim.store.get(resource, "default", "agent")!.spec as {
    template: { spec: { containers: { image: string }[] } };
    updateStrategy: { rollingUpdate: { paused?: boolean } };
  };

Deno.test("edgeroll history and undo, and kubectl edgeroll: the revisions with what changed, the template rolled back", async () => {
  const sim = await startSim({ nodes: 1 });
  try {
    seed(sim);
    const history = await kubectlEdgeroll(sim, ["history", "default/agent"]);
    assertEquals(history.code, 0, history.stderr);
    const lines = history.stdout.trim().split("\n");
    assertEquals(lines[0], "advanceddaemonsets/default/agent (* current)");
    assertEquals(lines.slice(2).map((l) => l.split(/\s+/)), [
      ["1", "h1", "agent=agent:v1", "first"],
      ["2*", "h2", "agent=agent:v2", "agent=agent:v2"],
    ]);
    const undo = await edgeroll(sim, ["undo", "default/agent"]);
    assertEquals(undo.code, 0, undo.stderr);
    assertStringIncludes(undo.stdout, "rolled back to revision 1 (h1)");
    assertEquals(spec(sim).template.spec.containers[0].image, "agent:v1");
    const missing = await edgeroll(sim, ["undo", "default/agent", "--to-revision=9"]);
    assertEquals(missing.code, 2);
    assertStringIncludes(missing.stderr, "has no revision 9 (it has 1, 2)");
  } finally {
    await sim.stop();
  }
});

Deno.test("edgeroll pause and resume: paused, unpaused, and a stop by the failure budget resumed with a value naming its revision", async () => {
  const sim = await startSim({ nodes: 1 });
  try {
    seed(sim);
    assertEquals((await kubectlEdgeroll(sim, ["pause", "default/agent"])).code, 0);
    assertEquals(spec(sim).updateStrategy.rollingUpdate.paused, true);
    const stored = sim.store.get(ads, "default", "agent")!;
    sim.store.update(ads, {
      ...stored,
      status: {
        daemonSetHash: "h2",
        rolloutStop: {
          revision: "h2",
          reason: "FailureBudgetExceeded",
          at: "2026-11-26T00:00:00Z",
          pods: [],
        },
      },
    } as never);
    const resumed = await edgeroll(sim, ["resume", "default/agent"]);
    assertEquals(resumed.code, 0, resumed.stderr);
    assertStringIncludes(resumed.stdout, "the failures that stopped revision h2 are acknowledged");
    const after = sim.store.get(ads, "default", "agent")!;
    assertEquals(spec(sim).updateStrategy.rollingUpdate.paused, false);
    const value = after.metadata.annotations?.["apps.edgeroll.dev/resume-revision"] ?? "";
    assertEquals(value.startsWith("h2/"), true, value);
  } finally {
    await sim.stop();
  }
});

Deno.test("kubectl edgeroll approve, promote and abort: annotations naming the plan's revision and step; resume lifts an abort; a set without a plan is said", async () => {
  const sim = await startSim({ nodes: 1 });
  try {
    seed(sim);
    const noPlan = await kubectlEdgeroll(sim, ["approve", "default/agent"]);
    assertEquals(noPlan.code, 2);
    assertStringIncludes(noPlan.stderr, "has no rollout plan for its current revision h2");
    const stored = sim.store.get(ads, "default", "agent")!;
    const plan = { revision: "h2", step: 2, steps: 3, target: 2, state: "AwaitingApproval" };
    sim.store.update(ads, {
      ...stored,
      status: { daemonSetHash: "h2", plan: { ...plan, domains: [] } },
    } as never);
    const annotations = () => sim.store.get(ads, "default", "agent")!.metadata.annotations ?? {};
    const approved = await kubectlEdgeroll(sim, ["approve", "default/agent"]);
    assertEquals(approved.code, 0, approved.stderr);
    assertStringIncludes(approved.stdout, "step 2 of 3 of revision h2 approved");
    assertEquals(annotations()["apps.edgeroll.dev/approved-step"], "h2/2");
    assertEquals((await edgeroll(sim, ["promote", "default/agent"])).code, 0);
    assertEquals(annotations()["apps.edgeroll.dev/promoted"], "h2");
    const aborted = await edgeroll(sim, ["abort", "default/agent"]);
    assertStringIncludes(aborted.stdout, "the rollout of revision h2 aborted at step 2 of 3");
    assertEquals(annotations()["apps.edgeroll.dev/aborted"], "h2");
    assertEquals((await edgeroll(sim, ["resume", "default/agent"])).code, 0);
    assertEquals(annotations()["apps.edgeroll.dev/aborted"], undefined);
  } finally {
    await sim.stop();
  }
});

Deno.test("kubectl edgeroll on a Kruise DaemonSet by Kruise's short name: history, undo, pause and resume", async () => {
  const sim = await startSim({ nodes: 1 });
  try {
    seed(sim, kruiseDaemonSets);
    const kruise = kruiseDaemonSets.resource;
    const history = await kubectlEdgeroll(sim, ["history", "daemon/default/agent"]);
    assertEquals(history.code, 0, history.stderr);
    const lines = history.stdout.trim().split("\n");
    assertEquals(lines[0], "daemonsets.apps.kruise.io/default/agent (* current)");
    assertEquals(lines.slice(2).map((l) => l.split(/\s+/)[0]), ["1", "2*"]);
    const undo = await kubectlEdgeroll(sim, ["undo", "daemon/default/agent"]);
    assertEquals(undo.code, 0, undo.stderr);
    assertStringIncludes(undo.stdout, "rolled back to revision 1 (h1)");
    assertEquals(spec(sim, kruise).template.spec.containers[0].image, "agent:v1");
    assertEquals((await kubectlEdgeroll(sim, ["pause", "daemon/default/agent"])).code, 0);
    assertEquals(spec(sim, kruise).updateStrategy.rollingUpdate.paused, true);
    assertEquals((await kubectlEdgeroll(sim, ["resume", "daemon/default/agent"])).code, 0);
    assertEquals(spec(sim, kruise).updateStrategy.rollingUpdate.paused, false);
  } finally {
    await sim.stop();
  }
});

Deno.test("edgeroll pause and resume on an OpenYurt DaemonSet: an annotation, as it has no paused field; a missing set is said", async () => {
  const sim = await startSim({ nodes: 1 });
  try {
    sim.store.create("daemonsets.apps", {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: {
        name: "yurt",
        namespace: "default",
        annotations: { "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate" },
      },
      spec: {
        selector: { matchLabels: { app: "yurt" } },
        template: {
          metadata: { labels: { app: "yurt" } },
          spec: { containers: [{ name: "c", image: "y:1" }] },
        },
        updateStrategy: { type: "OnDelete" },
      },
    } as never);
    const paused = await edgeroll(sim, ["pause", "daemonsets/default/yurt"]);
    assertEquals(paused.code, 0, paused.stderr);
    const annotations = () =>
      sim.store.get("daemonsets.apps", "default", "yurt")!.metadata.annotations;
    assertEquals(annotations()?.["apps.edgeroll.dev/paused"], "true");
    // resume reads the set's written status, a RolloutStatus: without its CRD it says so, with
    // the path it asked, and changes nothing.
    const noCrd = await edgeroll(sim, ["resume", "daemonsets/default/yurt"]);
    assertEquals(noCrd.code, 1, noCrd.stderr);
    assertStringIncludes(noCrd.stderr, "rolloutstatuses/yurt");
    assertEquals(annotations()?.["apps.edgeroll.dev/paused"], "true");
    sim.store.create("customresourcedefinitions.apiextensions.k8s.io", rolloutStatusCrd() as never);
    const resumed = await edgeroll(sim, ["resume", "daemonsets/default/yurt"]);
    assertEquals(resumed.code, 0, resumed.stderr);
    assertEquals(annotations()?.["apps.edgeroll.dev/paused"], undefined);
    const missing = await edgeroll(sim, ["pause", "default/nosuch"]);
    assertEquals(missing.code, 2);
    assertStringIncludes(missing.stderr, "advanceddaemonsets/default/nosuch not found");
  } finally {
    await sim.stop();
  }
});
