// deno-lint-ignore-file no-explicit-any -- answers of the controller are untyped JSON
/**
 * For integration tests and the demo: the simulator with a working cluster (kubelets,
 * scheduler, node lifecycle) and the CRD installed, and the controller served on a real port
 * against it with the real client-node.
 */
import * as k8s from "@kubernetes/client-node";
import { edgerollCrds } from "../api/crd.ts";
import { startClusterBehaviour } from "../sim/cluster/mod.ts";
import { type Sim, type SimOptions, startSim } from "../sim/start.ts";
import type { Logger } from "../lib/log.ts";
import { memoryLogger } from "../lib/log.ts";
import type { RelayOptions } from "../relay/relay.ts";
import { type Authenticator, staticTokenAuthenticator } from "../routes/auth.ts";
import type { KubeClient } from "../kube/client.ts";
import { type RunningController, startController } from "../cli/serve.ts";

export const controllerToken = "integration-token";

/** The relay as the integration tests run it: to `target` with the test token, flushing fast. */
export function relayOptions(kc: k8s.KubeConfig, target: string): RelayOptions {
  return { kubeConfig: kc, target, token: controllerToken, logger: memoryLogger(), flushMs: 20 };
}

export interface ControllerOnSim {
  sim: Sim;
  kc: k8s.KubeConfig;
  controller: RunningController;
  logger: Logger;
  /** POST to the controller with the bearer token. */
  post(path: string, init?: RequestInit): Promise<{ status: number; body: any }>;
}

export interface ControllerOnSimOptions extends SimOptions {
  /** Simulated time factor of the cluster (pod start, pulls); default 50. */
  speed?: number;
  tickEveryMs?: number;
  /** Watch-backed node and pod caches (default true, as `serve`). */
  cache?: boolean;
  logger?: Logger;
  /** Default: the static `controllerToken`. */
  auth?: (kube: KubeClient) => Authenticator;
}

export async function withControllerOnSim(
  options: ControllerOnSimOptions,
  body: (env: ControllerOnSim) => Promise<void>,
): Promise<void> {
  const speed = options.speed ?? 50;
  const sim = await startSim({
    nodes: 4,
    ...options,
    behaviour: (store, o) =>
      startClusterBehaviour(store, {
        nodes: o.nodes,
        zones: o.zones,
        speed,
        seed: 7,
        log: () => {},
      }),
  });
  let controller: RunningController | undefined;
  try {
    for (const crd of edgerollCrds()) {
      sim.store.create("customresourcedefinitions.apiextensions.k8s.io", crd as never);
    }
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sim.kubeconfigPath);
    const logger = options.logger ?? memoryLogger();
    controller = startController({
      kubeConfig: kc,
      port: 0,
      hostname: "127.0.0.1",
      auth: options.auth ?? (() => staticTokenAuthenticator(controllerToken)),
      tickEveryMs: options.tickEveryMs,
      eventDelayMs: 20,
      cache: options.cache,
      logger,
    });
    const url = controller.url;
    const post = async (path: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${controllerToken}`);
      const res = await fetch(`${url}${path}`, { method: "POST", ...init, headers });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    await body({ sim, kc, controller, logger, post });
  } finally {
    await controller?.stop();
    await sim.stop();
  }
}

/** One more controller replica on the same cluster, with the test token. */
export function startReplica(
  kc: k8s.KubeConfig,
  options: { tickEveryMs?: number } = {},
): RunningController {
  return startController({
    kubeConfig: kc,
    port: 0,
    hostname: "127.0.0.1",
    auth: () => staticTokenAuthenticator(controllerToken),
    tickEveryMs: options.tickEveryMs,
    eventDelayMs: 10,
    logger: memoryLogger(),
  });
}

/**
 * Records every pod transition of a set as the simulator commits it, and keeps the worst
 * moments seen: nodes without an available pod (what maxUnavailable bounds), and live pods
 * on one node (more than one means a pod was created twice, when maxSurge is 0).
 */
/** What a budget watch keeps of a pod the simulator committed. */
export interface SeenPod {
  node: string;
  ready: boolean;
  terminating: boolean;
  image: string;
}

export function seenPod(pod: any): SeenPod {
  return {
    node: pod.spec?.nodeName ?? "",
    ready: pod.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True") ??
      false,
    terminating: pod.metadata.deletionTimestamp !== undefined,
    image: pod.spec?.containers?.[0]?.image ?? "",
  };
}

export function watchBudget(sim: Sim, app: string) {
  const pods = new Map<string, SeenPod>();
  const worst = { unavailableNodes: 0, podsOnOneNode: 0, transitions: 0 };
  let armed = false;
  const nodes = () => sim.store.scan("nodes").map((n) => n.metadata.name);
  const measure = () => {
    const live = [...pods.values()].filter((p) => !p.terminating);
    const perNode = new Map<string, number>();
    for (const p of live) perNode.set(p.node, (perNode.get(p.node) ?? 0) + 1);
    worst.podsOnOneNode = Math.max(worst.podsOnOneNode, ...perNode.values());
    if (!armed) return;
    const available = new Set(live.filter((p) => p.ready).map((p) => p.node));
    const unavailable = nodes().filter((n) => !available.has(n)).length;
    worst.unavailableNodes = Math.max(worst.unavailableNodes, unavailable);
  };
  const unsubscribe = sim.store.subscribe((event) => {
    if (event.resource !== "pods" || event.object.metadata.labels?.app !== app) return;
    const pod = event.object as any;
    worst.transitions++;
    if (event.type === "DELETED") {
      pods.delete(pod.metadata.uid);
    } else {
      pods.set(pod.metadata.uid, seenPod(pod));
    }
    measure();
  });
  return {
    worst,
    /** From now on, count unavailable nodes (after the first rollout has placed every pod). */
    arm() {
      armed = true;
      measure();
    },
    stop: unsubscribe,
  };
}

export const adsResource = {
  group: "apps.edgeroll.dev",
  version: "v1alpha1",
  plural: "advanceddaemonsets",
};

/** The AdvancedDaemonSet `default/agent` the tests roll out. */
export function agentSet(image: string, maxUnavailable: number | string = 1) {
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "agent", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: {
        metadata: { labels: { app: "agent" } },
        spec: { containers: [{ name: "agent", image }] },
      },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable } },
    },
  };
}

export async function createAgentSet(
  kc: k8s.KubeConfig,
  image: string,
  maxUnavailable: number | string = 1,
) {
  await kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
    ...adsResource,
    namespace: "default",
    body: agentSet(image, maxUnavailable),
  });
}

/** Changes the agent's image: a new template, a new generation, a rollout. */
export async function setAgentImage(kc: k8s.KubeConfig, image: string) {
  await kc.makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject(
    {
      ...adsResource,
      namespace: "default",
      name: "agent",
      body: { spec: { template: agentSet(image).spec.template } },
    },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
}

/** The set's status as the simulator stores it (read past any injected fault). */
export function agentStatus(sim: Sim): any {
  return sim.store.get(`${adsResource.plural}.${adsResource.group}`, "default", "agent").status;
}

/** True once the set reports Complete for `generation` with every node on `image`. */
export function rolledOut(sim: Sim, generation: number, image: string): boolean {
  const status = agentStatus(sim);
  const nodes = sim.store.count("nodes");
  const pods = sim.store.scan("pods", { namespace: "default" })
    .filter((p) => p.metadata.labels?.app === "agent" && !p.metadata.deletionTimestamp) as any[];
  return status?.observedGeneration === generation && status.updatedNumberScheduled === nodes &&
    status.numberAvailable === nodes &&
    status.conditions?.some((c: any) => c.type === "Complete" && c.status === "True") &&
    pods.length === nodes && pods.every((p) => p.spec.containers[0].image === image);
}
