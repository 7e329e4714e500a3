/**
 * For route tests: a fresh in-memory cluster per test (a set, nodes) and a tiny planner with
 * the engine's contract: one pod per node, status a function of the snapshot only.
 */
import { memoryLogger } from "../../lib/log.ts";
import { KubeClient } from "../../kube/client.ts";
import { interceptApi, type KubeApi, type Overrides } from "../../kube/api.ts";
import type { SnapshotCache } from "../../kube/cache.ts";
import { memoryApi } from "./memory-api.ts";
import type { Plan, Snapshot } from "../../api/plan.ts";
import type { Pod } from "../../api/kube-objects.ts";
import { staticTokenAuthenticator } from "../../routes/auth.ts";
import { type AppDeps, createApp } from "../../routes/app.ts";
import { Metrics } from "../../controller/metrics.ts";

export const token = "s3cret-token";
export const now = Date.parse("2026-06-01T12:00:00Z");

export function advancedDaemonSet(name = "agent", namespace = "edge") {
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name, namespace, generation: 1 },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "agent:1" }] },
      },
    },
  };
}

/** A pod whose controller is the AdvancedDaemonSet `edge/agent`. */
export function podOfAgent(name: string, resourceVersion?: string) {
  return {
    metadata: {
      name,
      namespace: "edge",
      resourceVersion,
      ownerReferences: [{
        apiVersion: "apps.edgeroll.dev/v1alpha1",
        kind: "AdvancedDaemonSet",
        name: "agent",
        uid: "u",
        controller: true,
      }],
    },
  };
}

/** One pod per node; the status counts what it sees, so a converged set plans nothing. */
export function onePodPerNode(snapshot: Snapshot): Plan {
  const set = snapshot.set;
  const name = set.metadata.name!;
  const podNodes = new Set(snapshot.pods.map((p) => p.spec.nodeName));
  const missing = snapshot.nodes.map((n) => n.metadata.name!).filter((n) => !podNodes.has(n))
    .sort();
  const actions = missing.map((node) => ({
    type: "createPod" as const,
    reason: `node ${node} has no pod`,
    node,
    revision: "r1",
    pod: {
      metadata: { name: `${name}-${node}`, labels: { app: name } },
      spec: { nodeName: node, containers: [{ name: "c" }] },
    } as Pod,
  }));
  const status = {
    observedGeneration: set.metadata.generation,
    desiredNumberScheduled: snapshot.nodes.length,
    currentNumberScheduled: snapshot.pods.length,
    numberReady: 0,
    numberMisscheduled: 0,
    numberUnavailable: missing.length,
    conditions: [{ type: missing.length ? "Progressing" : "Complete", status: "True" as const }],
  };
  return {
    actions,
    status,
    conditions: status.conditions,
    events: actions.length
      ? [{ type: "Normal", reason: "CreatingPods", message: `${actions.length} pods` }]
      : [],
    requeueAfterSeconds: actions.length ? 5 : null,
    awaited: missing.map((n) => ({ what: `pod on node/${n}`, why: "created, not yet observed" })),
    nodes: [],
    burst: 250,
    budget: { rule: "maxUnavailable", limit: 1, inUse: missing.length },
  };
}

export interface Harness {
  api: ReturnType<typeof memoryApi>;
  controller: ReturnType<typeof createApp>;
  logs: ReturnType<typeof memoryLogger>;
  plans: Snapshot[];
  request(path: string, init?: RequestInit & { auth?: boolean }): Promise<Response>;
  [Symbol.asyncDispose](): Promise<void>;
}

export function harness(
  options: {
    nodes?: number;
    overrides?: Overrides;
    deps?: Partial<AppDeps>;
    plan?: (s: Snapshot, now: number) => Plan;
    /** Node and pod caches over the memory API (as `serve` has). */
    cache?: (api: KubeApi) => SnapshotCache;
    /** Kruise compatibility mode (`serve --kruise`). */
    kruise?: boolean;
  } = {},
): Harness {
  const api = memoryApi();
  api.put("advanceddaemonsets", advancedDaemonSet());
  for (let i = 0; i < (options.nodes ?? 3); i++) {
    api.put("nodes", { metadata: { name: `node-${i}` } });
  }
  const logs = memoryLogger();
  const plans: Snapshot[] = [];
  const metrics = new Metrics();
  const kube = new KubeClient(interceptApi(api, options.overrides ?? {}), {
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1, sleep: () => Promise.resolve() },
    onRequest: (record) => metrics.observeRequest(record),
    cache: options.cache,
    kruise: options.kruise,
  });
  const plan = options.plan ?? onePodPerNode;
  const controller = createApp({
    kube,
    plan: (snapshot, at) => {
      plans.push(snapshot);
      return plan(snapshot, at);
    },
    logger: logs,
    auth: staticTokenAuthenticator(token),
    clock: () => now,
    metrics,
    ...options.deps,
  });
  return {
    api,
    controller,
    logs,
    plans,
    request(path, { auth = true, ...init } = {}) {
      const headers = new Headers(init.headers);
      if (auth) headers.set("authorization", `Bearer ${token}`);
      return Promise.resolve(controller.app.request(path, { method: "POST", ...init, headers }));
    },
    [Symbol.asyncDispose]: async () => {
      await controller.close();
      await kube.cache?.close();
    },
  };
}
