/**
 * Rollout plans (ADR 0050) as an operator drives them from the command line: the nodes labelled
 * into zones and NodePools, a one-node canary that waits for `kubectl edgeroll approve`, a soak
 * between domains, a new template mid-plan that starts over, a cut node updated on its return in
 * a finished domain, and a crash-looping image stopped in the canary domain and rolled back
 * while the other domains never leave the old version. The labels are removed after.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import type { RolloutPlanInput, RolloutPlanStatus } from "../../api/rollout-plan.ts";
import { withEdgeroll } from "../processes.ts";
import {
  advancedDaemonSet,
  asOpenYurtDaemonSet,
  completeOn,
  image,
  podsByNode,
  setImage,
  type SetResource,
  type SetStatus,
  setStatus,
} from "./edgeroll-scenarios.ts";
import { kubectlEdgeroll } from "./failure-scenario.ts";
import { conditionStatus, eventually, type Kube } from "./kube.ts";
import { kruiseSetKind } from "../../api/set-ref.ts";
import { rolloutPlanAnnotation } from "../../api/rollout-plan.ts";
import {
  failureAnnotations,
  maxUnavailableAnnotation,
  updateStrategyAnnotation,
} from "../../api/openyurt.ts";
import { withKruiseMode } from "../kruise/mode.ts";
import type { Scenario } from "./scenarios.ts";
import type { E2eTarget } from "./target.ts";

const zoneLabel = "topology.kubernetes.io/zone";
const poolLabel = "apps.openyurt.io/nodepool";

/** edge-1, edge-2, edge-3 in zones a, b, c and in NodePools pool-1 (edge-1, edge-2) and pool-2. */
function domainLabels(target: E2eTarget): [string, Record<string, string>][] {
  const zones = ["zone-a", "zone-b", "zone-c"];
  return target.nodes.map((node, i) => [node, {
    [zoneLabel]: zones[i % zones.length],
    [poolLabel]: i < 2 ? "pool-1" : "pool-2",
  }]);
}

/** The controller's OTA API, as a node's owner calls it. */
export interface ControllerApi {
  url: string;
  token: string;
}

/** edgeroll serving for the length of `body`, as a kind of set needs it. */
export type Serve = (
  target: E2eTarget,
  body: (api: ControllerApi) => Promise<void>,
) => Promise<void>;

const serveEdgeroll: Serve = (target, body) =>
  withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, body);

/**
 * `body` in a namespace of its own, with edgeroll serving and the nodes labelled into domains; the
 * labels are taken off after, whatever happens, and the namespace deleted.
 */
export async function onDomains(
  target: E2eTarget,
  kube: Kube,
  ns: string,
  body: (api: ControllerApi) => Promise<void>,
  serve: Serve = serveEdgeroll,
): Promise<void> {
  await kube.installCrd();
  await kube.createNamespace(ns);
  const labels = domainLabels(target);
  const label = (node: string, values: string[]) =>
    kube.run(["label", "node", node, "--overwrite", ...values]);
  for (const [node, values] of labels) {
    await label(node, Object.entries(values).map(([k, v]) => `${k}=${v}`));
  }
  try {
    await serve(target, body);
  } finally {
    for (const [node, values] of labels) await label(node, Object.keys(values).map((k) => `${k}-`));
  }
  await kube.run(["delete", "namespace", ns, "--wait=false"]);
}

export function plannedSet(ns: string, plan: RolloutPlanInput, failurePolicy?: object) {
  const set = advancedDaemonSet(ns, "v1");
  return {
    ...set,
    spec: {
      ...set.spec,
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { maxUnavailable: 1, plan, ...(failurePolicy ? { failurePolicy } : {}) },
      },
    },
  };
}

export type PlannedStatus = SetStatus & {
  daemonSetHash?: string;
  plan?: RolloutPlanStatus;
  rollback?: { to: string; reason: string };
};

/** The image each node's pod runs (pods on their way out left aside). */
export async function imagesByNode(kube: Kube, ns: string): Promise<Record<string, string>> {
  const byNode = podsByNode(await kube.pods(ns, "app=edge-agent"));
  return Object.fromEntries(
    [...byNode].map(([node, p]) => [node, p.spec.containers[0].image ?? ""]).sort(),
  );
}

/** Waits until the plan of the current revision is in `state` at `step`. */
export function planAt(
  kube: Kube,
  ns: string,
  state: string,
  step: number,
  resource: SetResource = "advanceddaemonsets",
): Promise<PlannedStatus> {
  return eventually(`plan ${state} at step ${step}`, async () => {
    const status = await setStatus(kube, ns, resource) as PlannedStatus;
    const plan = status.plan;
    return plan?.revision === status.daemonSetHash && plan?.state === state && plan.step === step
      ? status
      : undefined;
  }, 120_000);
}

export const expected = (target: E2eTarget, versions: Record<string, string>) =>
  Object.fromEntries(target.nodes.map((n) => [n, image(versions[n])]));

/** zone-b's one node first, then an approval; zone-a, then a soak; then zone-c. */
const canaryThenZones: RolloutPlanInput = {
  domainLabel: zoneLabel,
  firstDomains: ["zone-b"],
  steps: [
    { nodes: 1, pause: { approval: true } },
    { domains: 1, pause: { soakSeconds: 4 } },
    { nodes: "100%" },
  ],
};

const zonesScenario: Scenario = {
  name:
    "rollout plan over zones: a one-node canary waits for kubectl edgeroll approve, a new template starts over, a soak holds the next zone",
  async run(target, kube) {
    const ns = "e2e-plan-zones";
    const cliRef = `ads/${ns}/edge-agent`;
    const [one, two, three] = target.nodes;
    await onDomains(target, kube, ns, async () => {
      await kube.apply(plannedSet(ns, canaryThenZones));
      await completeOn(target, kube, ns, "v1");

      // The canary: zone-b's node alone, then the plan waits; nothing moves while it does.
      await setImage(kube, ns, "v2");
      const canary = await planAt(kube, ns, "AwaitingApproval", 1);
      const paused = canary.conditions?.find((c) => c.type === "Paused");
      assertEquals([paused?.status, paused?.reason], ["True", "AwaitingApproval"]);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      assertEquals(
        await imagesByNode(kube, ns),
        expected(target, { [one]: "v1", [two]: "v2", [three]: "v1" }),
      );
      const shown = await kubectlEdgeroll(target.kubeconfigPath, ["status", cliRef]);
      assertStringIncludes(shown, "plan: step 1 of 3 (1 node), AwaitingApproval");
      assertStringIncludes(shown, "zone-b");

      // A new template mid-plan: v3's plan starts at its first step, v2's approvals are gone.
      await setImage(kube, ns, "v3");
      const again = await planAt(kube, ns, "AwaitingApproval", 1);
      assert(again.daemonSetHash !== canary.daemonSetHash);
      assertEquals(
        await imagesByNode(kube, ns),
        expected(target, { [one]: "v1", [two]: "v3", [three]: "v1" }),
      );

      // Approved: zone-a next (by name), then a soak holds zone-c, then it rolls.
      const approved = await kubectlEdgeroll(target.kubeconfigPath, ["approve", cliRef]);
      assertStringIncludes(approved, `step 1 of 3 of revision ${again.daemonSetHash} approved`);
      const soaking = await planAt(kube, ns, "Soaking", 2);
      assertEquals(
        (await imagesByNode(kube, ns))[three],
        image("v1"),
        "zone-c waits out the soak",
      );
      assert(soaking.plan?.doneSince);
      await completeOn(target, kube, ns, "v3");
      const done = await setStatus(kube, ns) as PlannedStatus;
      assertEquals(done.plan?.state, "Done");
      const reasons = new Set((await kube.eventsAbout(ns, "edge-agent")).map((e) => e.reason));
      for (const reason of ["PlanStarted", "PlanAwaitingApproval", "PlanStepDone", "PlanDone"]) {
        assert(reasons.has(reason), `an Event ${reason} among ${[...reasons].join(", ")}`);
      }
    });
  },
};

const poolsScenario: Scenario = {
  name:
    "rollout plan over NodePools: a cut node in the finished first pool is updated on its return; a crash-looping image is stopped in the first pool and rolled back, the other pool never leaves the old version",
  async run(target, kube) {
    const ns = "e2e-plan-pools";
    const cliRef = `ads/${ns}/edge-agent`;
    const [one, two, three] = target.nodes;
    await onDomains(target, kube, ns, async () => {
      await kube.apply(plannedSet(ns, {
        domainLabel: poolLabel,
        firstDomains: ["pool-1"],
        steps: [{ domains: 1, pause: { approval: true } }, { nodes: "100%" }],
      }, { maxFailed: 0, rollback: true }));
      await completeOn(target, kube, ns, "v1");

      // pool-1 with one node cut: its other node is updated, and the step is done without it.
      await target.disconnect(one);
      try {
        await kube.nodeReady(one, (ready) => ready !== "True");
        await setImage(kube, ns, "v2");
        await planAt(kube, ns, "AwaitingApproval", 1);
        assertEquals(
          await imagesByNode(kube, ns),
          expected(target, { [one]: "v1", [two]: "v2", [three]: "v1" }),
        );
      } finally {
        await target.reconnect(one);
      }
      await eventually(`${one} updated on its return`, async () => {
        const images = await imagesByNode(kube, ns);
        return images[one] === image("v2") ? images : undefined;
      }, 120_000);
      // pool-1 done again, and still the approval is awaited: pool-2 waits.
      await planAt(kube, ns, "AwaitingApproval", 1);
      assertEquals((await imagesByNode(kube, ns))[three], image("v1"), "pool-2 waits");
      await kubectlEdgeroll(target.kubeconfigPath, ["promote", cliRef]);
      await completeOn(target, kube, ns, "v2");

      // A crash-looping image: stopped in pool-1's first node, v2 back there; pool-2 untouched.
      const before = (await kube.pods(ns, "app=edge-agent")).find((p) => p.spec.nodeName === three);
      // A crashing container is Ready between restarts: the verdict waits this long (ADR 0035);
      // set only now, as it would slow every wave before.
      await kube.patch(ns, "advanceddaemonsets", "edge-agent", "merge", {
        spec: { minReadySeconds: 4 },
      });
      await setImage(kube, ns, "crash");
      const rolledBack = await eventually("the rollback", async () => {
        const s = await setStatus(kube, ns) as PlannedStatus;
        return s.rollback;
      }, 120_000);
      assertEquals(rolledBack.reason, "FailureBudgetExceeded");
      await completeOn(target, kube, ns, "v2");
      const after = (await kube.pods(ns, "app=edge-agent")).find((p) => p.spec.nodeName === three);
      assertEquals(after?.metadata.uid, before?.metadata.uid, "pool-2's pod was never replaced");
    });
  },
};

/** A kind of set the plan scenario runs on, and how its plan and failure budget are written. */
interface PlanKind {
  /** For the scenario's name. */
  article: string;
  slug: string;
  resource: SetResource;
  /** The kind as an operator types it to kubectl edgeroll. */
  shortName: string;
  /** The set at v1, one node updated at a time, with `plan` and a failure budget of none. */
  manifest(ns: string, plan: RolloutPlanInput): unknown;
  serve: Serve;
  /** OTA: the nodes upgrade themselves, each as soon as its pod is marked. */
  nodesUpgrade?: boolean;
}

/** An OpenYurt DaemonSet in `mode` under the plan, with a failure budget of none. */
function openYurtKind(mode: string, article: string, slug: string): PlanKind {
  return {
    article,
    slug,
    resource: "daemonsets",
    shortName: "ds",
    manifest: (ns, plan) =>
      asOpenYurtDaemonSet(advancedDaemonSet(ns, "v1"), {
        [updateStrategyAnnotation]: mode,
        [maxUnavailableAnnotation]: "1",
        [failureAnnotations.maxFailed]: "0",
        [rolloutPlanAnnotation]: JSON.stringify(plan),
      }),
    serve: serveEdgeroll,
    nodesUpgrade: mode === "OTA",
  };
}

const planKinds: PlanKind[] = [
  {
    article: "a Kruise DaemonSet (serve --kruise)",
    slug: "kruise",
    resource: kruiseSetKind,
    shortName: "daemon",
    manifest(ns, plan) {
      const { metadata, spec } = advancedDaemonSet(ns, "v1");
      return {
        apiVersion: "apps.kruise.io/v1beta1",
        kind: "DaemonSet",
        metadata: { ...metadata, annotations: { [rolloutPlanAnnotation]: JSON.stringify(plan) } },
        spec: {
          ...spec,
          updateStrategy: {
            type: "RollingUpdate",
            rollingUpdate: { maxUnavailable: 1, failurePolicy: { maxFailed: 0 } },
          },
        },
      };
    },
    serve: (target, body) =>
      withKruiseMode(
        target.kubeconfigPath,
        { serveArgs: ["--tick=1s"] },
        (controllers) => body({ url: controllers.urls[0], token: controllers.token }),
      ),
  },
  openYurtKind("AdvancedRollingUpdate", "an OpenYurt AdvancedRollingUpdate DaemonSet", "openyurt"),
  openYurtKind("OTA", "an OpenYurt OTA DaemonSet, its nodes upgrading when marked", "ota"),
];

/**
 * The nodes of an OTA fleet, each upgrading as soon as its pod is marked PodNeedUpgrade: through
 * the controller's OTA API, as a node's owner calls it (the node still decides; here, at once).
 * Runs until stopped; answers the pods it upgraded.
 */
function nodesUpgradingWhenMarked(kube: Kube, ns: string, api: ControllerApi) {
  let running = true;
  const upgraded: string[] = [];
  const loop = (async () => {
    while (running) {
      for (const pod of await kube.pods(ns, "app=edge-agent")) {
        if (pod.metadata.deletionTimestamp || upgraded.includes(pod.metadata.uid)) continue;
        if (conditionStatus(pod, "PodNeedUpgrade") !== "True") continue;
        const res = await fetch(
          `${api.url}/openyurt.io/v1/namespaces/${ns}/pods/${pod.metadata.name}/upgrade`,
          { method: "POST", headers: { authorization: `Bearer ${api.token}` } },
        );
        // 403: the mark was taken back between the read and the call (a stop): not upgraded.
        if (res.status !== 200 && res.status !== 403) {
          throw new Error(`upgrade of ${pod.metadata.name}: ${res.status} ${await res.text()}`);
        }
        await res.body?.cancel();
        if (res.status === 200) upgraded.push(pod.metadata.uid);
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  })();
  return {
    upgraded,
    async stop() {
      running = false;
      await loop;
    },
  };
}

function planKindScenario(kind: PlanKind): Scenario {
  return {
    name:
      `rollout plan on ${kind.article}: a one-node canary waits for kubectl edgeroll approve, a soak holds the next zone, a crash-looping image is stopped in the canary's zone`,
    async run(target, kube) {
      const ns = `e2e-plan-${kind.slug}`;
      const cliRef = `${kind.shortName}/${ns}/edge-agent`;
      const { resource } = kind;
      const [one, two, three] = target.nodes;
      await onDomains(target, kube, ns, async (api) => {
        const nodes = kind.nodesUpgrade ? nodesUpgradingWhenMarked(kube, ns, api) : undefined;
        try {
          // Kruise's CRD may still be settling in discovery: retried until kubectl knows it.
          await eventually("the set applied", () => kube.apply(kind.manifest(ns, canaryThenZones)));
          await completeOn(target, kube, ns, "v1", resource);

          // The canary: zone-b's node alone, then the plan waits; nothing moves while it does.
          await setImage(kube, ns, "v2", resource);
          const canary = await planAt(kube, ns, "AwaitingApproval", 1, resource);
          await new Promise((resolve) => setTimeout(resolve, 3_000));
          assertEquals(
            await imagesByNode(kube, ns),
            expected(target, { [one]: "v1", [two]: "v2", [three]: "v1" }),
          );
          const approved = await kubectlEdgeroll(target.kubeconfigPath, ["approve", cliRef]);
          assertStringIncludes(
            approved,
            `step 1 of 3 of revision ${canary.daemonSetHash} approved`,
          );

          // Approved: zone-a next, then a soak holds zone-c, then it rolls.
          await planAt(kube, ns, "Soaking", 2, resource);
          assertEquals((await imagesByNode(kube, ns))[three], image("v1"), "zone-c soaks");
          await completeOn(target, kube, ns, "v2", resource);
          assertEquals((await setStatus(kube, ns, resource) as PlannedStatus).plan?.state, "Done");

          // A crash-looping image: stopped in zone-b's canary; zones a and c keep their pods.
          const before = podsByNode(await kube.pods(ns, "app=edge-agent"));
          await kube.patch(ns, resource, "edge-agent", "merge", { spec: { minReadySeconds: 4 } });
          await setImage(kube, ns, "crash", resource);
          const stopped = await eventually("RolloutStopped", async () => {
            const status = await setStatus(kube, ns, resource);
            const c = status.conditions?.find((c) => c.type === "RolloutStopped");
            return c?.status === "True" ? c : undefined;
          }, 120_000);
          assertEquals(stopped.reason, "FailureBudgetExceeded");
          await new Promise((resolve) => setTimeout(resolve, 3_000));
          const after = podsByNode(await kube.pods(ns, "app=edge-agent"));
          assertEquals(after.get(two)?.spec.containers[0].image, image("crash"));
          for (const node of [one, three]) {
            assertEquals(after.get(node)?.metadata.uid, before.get(node)?.metadata.uid, node);
            assertEquals(after.get(node)?.spec.containers[0].image, image("v2"), node);
          }
          if (nodes) {
            // Each node upgraded once per revision it was reached by: 3 to v2, 1 to crash.
            assertEquals(nodes.upgraded.length, 4, "upgrades through the OTA API");
          }
        } finally {
          await nodes?.stop();
        }
      }, kind.serve);
    },
  };
}

export const planScenarios = [zonesScenario, poolsScenario, ...planKinds.map(planKindScenario)];
