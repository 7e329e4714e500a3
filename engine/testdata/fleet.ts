/**
 * A tiny fake cluster for engine tests: builders for nodes, pods and sets, a pure `apply` that
 * performs a plan's actions as an API server would, and a `kubelet` step that starts pods.
 * Test-only: the engine never imports it.
 */
import { rolloutStatusObject } from "../../api/rollout-status.ts";
import type {
  AdvancedDaemonSetInput,
  AdvancedDaemonSetStatus,
} from "../../api/advanced-daemonset.ts";
import { Analysis, dueMeasurements, type Measurement } from "../../api/analysis.ts";
import {
  type ControllerRevision,
  type DaemonSet,
  Keys,
  type Node,
  type Pod,
  type Taint,
} from "../../api/kube-objects.ts";
import { formatTime, isNodeReady, podNodeName } from "../pod-node-state.ts";
import { plan } from "../plan.ts";
import type { Plan, Snapshot } from "../../api/plan.ts";
import type { RolloutPlanInput } from "../../api/rollout-plan.ts";
import { resizableRequirements } from "../../api/pod-resources.ts";
import { canonicalJson } from "../../api/hash.ts";

export const t0 = Date.parse("2026-01-01T00:00:00Z");
export const setUid = "uid-set";

export function node(
  name: string,
  opts: { ready?: boolean; labels?: Record<string, string>; taints?: Taint[] } = {},
): Node {
  return {
    metadata: {
      name,
      uid: `uid-node-${name}`,
      labels: { "kubernetes.io/hostname": name, ...opts.labels },
    },
    spec: { taints: opts.taints ?? [] },
    status: { conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  };
}

export function nodes(count: number, prefix = "node"): Node[] {
  const width = String(count - 1).length;
  return Array.from(
    { length: count },
    (_, i) => node(`${prefix}-${String(i).padStart(width, "0")}`),
  );
}

export function template(image: string, labels: Record<string, string> = { app: "agent" }) {
  return { metadata: { labels }, spec: { containers: [{ name: "agent", image }] } };
}

export function advancedDaemonSet(
  spec: Partial<AdvancedDaemonSetInput["spec"]> = {},
  metadata: Record<string, unknown> = {},
): AdvancedDaemonSetInput {
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "agent", namespace: "edge", uid: setUid, generation: 1, ...metadata },
    spec: { selector: { matchLabels: { app: "agent" } }, template: template("agent:v1"), ...spec },
  };
}

/** An AdvancedDaemonSet under a rollout plan over `nodes`, its rolling update `rollingUpdate`. */
export function plannedSnapshot(
  plan: RolloutPlanInput,
  rollingUpdate: object,
  nodes: Node[],
): Snapshot {
  return {
    kind: "AdvancedDaemonSet",
    set: advancedDaemonSet({
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { ...rollingUpdate, plan } },
    }) as Snapshot["set"],
    pods: [],
    nodes,
    revisions: [],
  };
}

export function openYurtDaemonSet(annotations: Record<string, string>): DaemonSet {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "nginx", namespace: "default", uid: setUid, generation: 1, annotations },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: template("nginx:1.19.4"),
      updateStrategy: { type: "OnDelete" },
    },
  };
}

/** A running pod owned by the set, ready since `readySince` (not ready when null). */
export function pod(
  name: string,
  nodeName: string,
  hash: string,
  opts: { readySince?: number | null; created?: number; phase?: "Running" | "Failed" | "Pending" } =
    {},
): Pod {
  const readySince = opts.readySince === undefined ? t0 - 3600_000 : opts.readySince;
  return {
    metadata: {
      name,
      namespace: "edge",
      uid: `uid-${name}`,
      creationTimestamp: formatTime(opts.created ?? t0 - 7200_000),
      labels: { app: "agent", [Keys.revisionHash]: hash },
      ownerReferences: [{
        apiVersion: "x",
        kind: "x",
        name: "agent",
        uid: setUid,
        controller: true,
      }],
    },
    spec: { nodeName, containers: [{ name: "agent" }] },
    status: {
      phase: opts.phase ?? "Running",
      conditions: readySince === null
        ? [{ type: "Ready", status: "False" }]
        : [{ type: "Ready", status: "True", lastTransitionTime: formatTime(readySince) }],
    },
  };
}

export interface Cluster {
  snapshot: Snapshot;
  /** Counter for uids the fake API server hands out. */
  serial: number;
}

export function cluster(snapshot: Snapshot): Cluster {
  return { snapshot: structuredClone(snapshot), serial: 0 };
}

/** What the API server would hold after the executor applied `plan` (status first, then actions). */
export function apply(c: Cluster, plan: Plan, now: number): Cluster {
  const s = structuredClone(c.snapshot);
  let serial = c.serial;
  if (s.kind === "DaemonSet") {
    s.rolloutStatus = rolloutStatusObject(s.set, structuredClone(plan.status));
  } else s.set.status = structuredClone(plan.status);
  const podAt = (name: string, uid: string) =>
    s.pods.findIndex((p) => p.metadata.name === name && p.metadata.uid === uid);
  for (const action of plan.actions) {
    switch (action.type) {
      case "createPod": {
        if (s.pods.some((p) => p.metadata.name === action.pod.metadata.name)) break; // 409
        const created = structuredClone(action.pod);
        created.metadata.uid = `uid-${created.metadata.name}-${++serial}`;
        created.metadata.creationTimestamp = formatTime(now);
        created.status = { phase: "Pending", conditions: [] };
        s.pods.push(created);
        break;
      }
      case "deletePod": {
        const i = podAt(action.name, action.uid);
        if (i >= 0) s.pods.splice(i, 1);
        break;
      }
      case "patchPod": {
        const i = podAt(action.name, action.uid);
        if (i < 0) break;
        const meta = s.pods[i].metadata;
        const labels = { ...meta.labels };
        for (const [k, v] of Object.entries(action.patch.metadata.labels ?? {})) {
          if (v === null) delete labels[k];
          else labels[k] = v;
        }
        meta.labels = labels;
        if (action.patch.metadata.annotations) {
          const annotations = { ...meta.annotations };
          for (const [k, v] of Object.entries(action.patch.metadata.annotations)) {
            if (v === null) delete annotations[k];
            else annotations[k] = v;
          }
          meta.annotations = annotations;
        }
        if (action.patch.metadata.ownerReferences) {
          meta.ownerReferences = action.patch.metadata.ownerReferences;
        }
        if (action.patch.spec) s.pods[i].spec.containers = action.patch.spec.containers;
        // The resize went first (pods/resize): each container's cpu and memory.
        for (const { name, resources } of action.resize ?? []) {
          const container = s.pods[i].spec.containers.find((x) => x.name === name)!;
          container.resources = {
            ...container.resources,
            requests: { ...container.resources?.requests, ...resources.requests },
            limits: { ...container.resources?.limits, ...resources.limits },
          };
        }
        break;
      }
      case "setPodCondition": {
        const i = podAt(action.name, action.uid);
        if (i < 0) break;
        const status = s.pods[i].status ?? {};
        status.conditions = [
          ...(status.conditions ?? []).filter((cond) => cond.type !== action.condition.type),
          action.condition,
        ];
        s.pods[i].status = status;
        break;
      }
      case "createRevision": {
        const rev: ControllerRevision = structuredClone(action.revisionObject);
        if (s.revisions.some((r) => r.metadata.name === rev.metadata.name)) break;
        rev.metadata.uid = `uid-rev-${++serial}`;
        s.revisions.push(rev);
        break;
      }
      case "patchRevision": {
        const rev = s.revisions.find((r) => r.metadata.uid === action.uid);
        if (!rev) break;
        if (action.patch.revision !== undefined) rev.revision = action.patch.revision;
        if (action.patch.metadata?.ownerReferences) {
          rev.metadata.ownerReferences = action.patch.metadata.ownerReferences;
        }
        break;
      }
      case "deleteRevision":
        s.revisions = s.revisions.filter((r) => r.metadata.uid !== action.uid);
        break;
      case "createJob": {
        const pulls = s.pulls ??= { jobs: [], pods: [] };
        if (pulls.jobs.some((j) => j.metadata.name === action.job.metadata.name)) break;
        const job = structuredClone(action.job);
        job.metadata.uid = `uid-job-${++serial}`;
        job.metadata.creationTimestamp = formatTime(now);
        pulls.jobs.push(job);
        break;
      }
      case "deleteJob":
        if (!s.pulls) break;
        s.pulls.jobs = s.pulls.jobs.filter((j) => j.metadata.uid !== action.uid);
        s.pulls.pods = s.pulls.pods.filter((p) =>
          !p.metadata.ownerReferences?.some((o) => o.uid === action.uid)
        );
        break;
    }
  }
  return { snapshot: s, serial };
}

/**
 * The kubelets: pending pods on Ready nodes start and become ready at `now`, except on nodes in
 * `failing`, whose pods fail. Pods on NotReady nodes do not move. As a real kubelet, they keep
 * the conditions others wrote, and a pod with readiness gates is Ready only while every gate's
 * condition is True.
 */
export function kubelet(c: Cluster, now: number, failing: Set<string> = new Set()): Cluster {
  const s = structuredClone(c.snapshot);
  const ready = new Set(s.nodes.filter(isNodeReady).map((n) => n.metadata.name));
  // Each container as it runs: its image, its cpu and memory (a kubelet that resizes says so).
  const restarted = (p: Pod) =>
    p.spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      ready: true,
      resources: resizableRequirements(c.resources),
    }));
  const others = (p: Pod) => (p.status?.conditions ?? []).filter((c) => c.type !== "Ready");
  const readyNow = (p: Pod) => ({
    type: "Ready",
    status: gatesOpen(p) ? "True" as const : "False" as const,
    lastTransitionTime: formatTime(now),
  });
  for (const p of s.pods) {
    const nodeName = podNodeName(p) ?? "";
    if (!ready.has(nodeName)) continue;
    // An in-place update: the containers restart with their new images; a resize alone is
    // applied to them running (resizePolicy NotRequired), the pod Ready all along.
    const images = p.spec.containers.map((c) => c.image).join();
    const running = (p.status?.containerStatuses ?? []).map((c) => c.image).join();
    const inPlace = p.status?.phase === "Running" && p.metadata.annotations?.[Keys.inPlaceUpdate];
    if (inPlace && images !== running) {
      p.status = {
        phase: "Running",
        conditions: [...others(p), readyNow(p)],
        containerStatuses: restarted(p),
      };
      continue;
    }
    const resized = restarted(p);
    if (inPlace && canonicalJson(resized) !== canonicalJson(p.status?.containerStatuses)) {
      p.status = { ...p.status, containerStatuses: resized };
      continue;
    }
    if (p.status?.phase === "Pending") {
      p.status = failing.has(nodeName)
        ? { phase: "Failed", conditions: [...others(p), { type: "Ready", status: "False" }] }
        : {
          phase: "Running",
          conditions: [...others(p), readyNow(p)],
          containerStatuses: restarted(p),
        };
      continue;
    }
    // A gate that opened or closed since: Ready follows it.
    const current = p.status?.conditions?.find((c) => c.type === "Ready");
    if (
      p.status?.phase === "Running" && (p.spec.readinessGates ?? []).length > 0 &&
      current?.status !== readyNow(p).status
    ) {
      p.status = { ...p.status, conditions: [...others(p), readyNow(p)] };
    }
  }
  return { snapshot: s, serial: c.serial };
}

/** Every readiness gate's condition is True (a pod without gates: always). */
function gatesOpen(p: Pod): boolean {
  return (p.spec.readinessGates ?? []).every((g) =>
    p.status?.conditions?.some((c) => c.type === g.conditionType && c.status === "True")
  );
}

/** One reconcile at `now`: its plan applied, then the kubelets. */
export function reconciled(c: Cluster, now: number): Cluster {
  return kubelet(apply(c, plan(c.snapshot, now), now), now);
}

/**
 * `c` settled on its template by `rounds` reconciles a second apart from `now`, then moved to
 * agent:v2: the cluster, and when its next reconcile is.
 */
export function settledThenV2(c: Cluster, now: number, rounds = 4): { c: Cluster; now: number } {
  for (let i = 0; i < rounds; i++, now += 1000) c = reconciled(c, now);
  return { c: withTemplate(c, "agent:v2", 2), now };
}

export function withTemplate(c: Cluster, image: string, generation: number): Cluster {
  const s = structuredClone(c.snapshot);
  (s.set.spec as { template: unknown }).template = template(image);
  s.set.metadata.generation = generation;
  return { snapshot: s, serial: c.serial };
}

/**
 * `c` given a progress deadline of `seconds`, and `failurePolicy` on its rolling update when one
 * is given: the template, and so the revision, unchanged.
 */
export function withDeadline(c: Cluster, seconds: number, failurePolicy?: object): Cluster {
  const s = structuredClone(c.snapshot);
  const spec = s.set.spec as {
    progressDeadlineSeconds?: number;
    updateStrategy: { rollingUpdate: Record<string, unknown> };
  };
  spec.progressDeadlineSeconds = seconds;
  if (failurePolicy) spec.updateStrategy.rollingUpdate.failurePolicy = failurePolicy;
  return { snapshot: s, serial: c.serial };
}

/** What the native DaemonSet controller does for an OnDelete set: a pod on every node lacking one. */
export function nativeController(c: Cluster, hash: string, now: number): Cluster {
  const s = structuredClone(c.snapshot);
  for (const n of s.nodes) {
    const name = n.metadata.name!;
    if (s.pods.some((x) => x.spec.nodeName === name)) continue;
    const created = pod(`nginx-${name}-${hash}-${now}`, name, hash, {
      created: now,
      readySince: null,
    });
    created.status = { phase: "Pending", conditions: [] };
    s.pods.push(created);
  }
  return { snapshot: s, serial: c.serial };
}

export function yurtCluster(strategy: string, nodes: Node[]): Cluster {
  const revision = (hash: string, n: number) => ({
    metadata: {
      name: `nginx-${hash}`,
      labels: { [Keys.revisionHash]: hash },
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        name: "nginx",
        uid: setUid,
        controller: true,
      }],
    },
    revision: n,
  });
  return cluster({
    kind: "DaemonSet",
    set: openYurtDaemonSet({ "apps.openyurt.io/update-strategy": strategy }),
    pods: nodes.map((n) => pod(`nginx-${n.metadata.name}`, n.metadata.name!, "v1hash")),
    nodes,
    revisions: [revision("v1hash", 1), revision("v2hash", 2)],
  });
}

/** What a check's service answers for a domain at an instant (ADR 0055): values, or no answer. */
export type MeasureSource = (domain: string | undefined, now: number) => Partial<Measurement>;

/**
 * One reconcile as the controller makes it for a set with analysis checks: what the status says is
 * due is measured from `source` (every host allowed is `prom.test:9090`), then planned, applied,
 * and the kubelets run.
 */
export function measuredStep(c: Cluster, now: number, source: MeasureSource): [Plan, Cluster] {
  const s = structuredClone(c.snapshot);
  const spec = s.set.spec as { updateStrategy: { rollingUpdate: { analysis: unknown } } };
  const status = s.set.status as AdvancedDaemonSetStatus | undefined;
  const analysis = Analysis.parse(spec.updateStrategy.rollingUpdate.analysis);
  const due = status?.analysis && status.daemonSetHash
    ? dueMeasurements(analysis, status.analysis, status.daemonSetHash, now)
    : [];
  s.analysis = {
    allowedHosts: ["prom.test:9090"],
    measurements: due.map((d) => ({
      check: d.check.name,
      ...(d.domain !== undefined ? { domain: d.domain } : {}),
      at: formatTime(now),
      ...source(d.domain, now),
    })),
  };
  const p = plan(s, now);
  return [p, kubelet(apply({ snapshot: s, serial: c.serial }, p, now), now)];
}
