/**
 * The cluster an end-to-end scenario runs against, chosen by `EDGEROLL_E2E_TARGET=sim|cluster`.
 * Both give a kubeconfig for the real `kubectl`, the same four node-link verbs and the API
 * server's stop and start, so a scenario says `target.disconnect("edge-2")` and does not care
 * which cluster it runs on.
 */
import {
  downCluster,
  nodeKubeconfig,
  nodeNames,
  startApiServer,
  stopApiServer,
  upCluster,
} from "../../cluster/control-plane.ts";
import { type NodeLinkVerb, setNodeLink } from "../../cluster/node-link.ts";
import { type NodeProxy, startNodeProxy } from "../../cluster/node-proxy.ts";
import { startClusterBehaviour } from "../../sim/cluster/mod.ts";
import { startSim } from "../../sim/start.ts";

export const targetKinds = ["sim", "cluster"] as const;
export type TargetKind = typeof targetKinds[number];

export interface E2eTarget {
  kind: TargetKind;
  kubeconfigPath: string;
  /** edge-1…edge-N */
  nodes: string[];
  /** The node's heartbeats and Lease stop; it goes NotReady (Unknown), its pods stay. */
  disconnect(node: string): Promise<void>;
  reconnect(node: string): Promise<void>;
  /** The node keeps its link but reports Ready=False. */
  notready(node: string): Promise<void>;
  ready(node: string): Promise<void>;
  /**
   * A kubeconfig with the node's own credentials (`system:node:<node>`), as its kubelet has:
   * the API server lets it reach that node's pods only.
   */
  nodeKubeconfig(node: string): Promise<string>;
  /**
   * The API server stops, as kube-apiserver on SIGTERM: its connections and watches end, new ones
   * are refused (a cluster node's link accepts them, then closes them), the node verbs fail (they
   * go through it). What it stored stays, and the rest of the cluster runs on.
   */
  stopApiServer(): Promise<void>;
  /** The API server starts again on its port, with all it stored; resolves once it is ready. */
  startApiServer(): Promise<void>;
  stop(): Promise<void>;
}

export function targetKindFromEnv(): TargetKind {
  const value = Deno.env.get("EDGEROLL_E2E_TARGET") ?? "sim";
  if (!targetKinds.includes(value as TargetKind)) {
    throw new Error(`EDGEROLL_E2E_TARGET must be one of ${targetKinds.join(", ")}, got "${value}"`);
  }
  return value as TargetKind;
}

export function startTarget(
  kind: TargetKind,
  options: { nodes: number; zones?: number },
): Promise<E2eTarget> {
  return kind === "cluster" ? startClusterTarget(options) : startSimTarget(options);
}

/** `body` on a target started for it, stopped after, whatever `body` does. */
export async function withTarget<T>(
  kind: TargetKind,
  options: { nodes: number; zones?: number },
  body: (target: E2eTarget) => Promise<T>,
): Promise<T> {
  const target = await startTarget(kind, options);
  try {
    return await body(target);
  } finally {
    await target.stop();
  }
}

function withVerbs(
  base: Omit<E2eTarget, NodeLinkVerb>,
  apply: (node: string, verb: NodeLinkVerb) => Promise<void>,
): E2eTarget {
  return {
    ...base,
    disconnect: (node) => apply(node, "disconnect"),
    reconnect: (node) => apply(node, "reconnect"),
    notready: (node) => apply(node, "notready"),
    ready: (node) => apply(node, "ready"),
  };
}

async function startClusterTarget(options: { nodes: number }): Promise<E2eTarget> {
  const log = Deno.env.get("EDGEROLL_E2E_VERBOSE")
    ? (event: Record<string, unknown>) => console.error(JSON.stringify(event))
    : undefined;
  const state = await upCluster({ nodes: options.nodes, log });
  // Each node's credentials reach the API server through a link of the node's own, cut and
  // healed with the node, so its edge agent loses the cloud as the node does (sim does the same).
  const apiserver = new URL(state.server);
  const proxies = new Map<string, NodeProxy>();
  const cut = new Set<string>();
  const proxyOf = (node: string) => {
    let proxy = proxies.get(node);
    if (!proxy) {
      proxy = startNodeProxy({ hostname: apiserver.hostname, port: Number(apiserver.port) });
      proxies.set(node, proxy);
      if (cut.has(node)) proxy.cut();
    }
    return proxy;
  };
  return withVerbs(
    {
      kind: "cluster",
      kubeconfigPath: state.kubeconfigPath,
      nodes: nodeNames(options.nodes),
      nodeKubeconfig: (node) => nodeKubeconfig(state, node, proxyOf(node).url),
      stopApiServer: () => stopApiServer(state),
      startApiServer: () => startApiServer(state),
      stop: async () => {
        await Promise.all([...proxies.values()].map((p) => p.close()));
        await downCluster();
      },
    },
    async (node, verb) => {
      await setNodeLink(state.kubeconfigPath, node, verb);
      if (verb === "disconnect") {
        cut.add(node);
        proxies.get(node)?.cut();
      } else if (verb === "reconnect") {
        cut.delete(node);
        proxies.get(node)?.heal();
      }
    },
  );
}

/**
 * Simulated durations are divided by this: the node grace period, pulls and starts take
 * seconds on the real cluster and a fraction of that here.
 */
const simSpeed = 20;

async function startSimTarget(options: { nodes: number; zones?: number }): Promise<E2eTarget> {
  const sim = await startSim({
    nodes: options.nodes,
    zones: options.zones,
    speed: simSpeed,
    behaviour: (store, behaviourOptions) => startClusterBehaviour(store, behaviourOptions),
  });
  return withVerbs(
    {
      kind: "sim",
      kubeconfigPath: sim.kubeconfigPath,
      nodes: nodeNames(options.nodes),
      nodeKubeconfig: (node) => sim.nodeKubeconfig(node),
      stopApiServer: () => sim.stopServing(),
      startApiServer: () => sim.resumeServing(),
      stop: () => sim.stop(),
    },
    // Through the admin API, as a person with curl would.
    async (node, verb) => {
      const response = await fetch(`${sim.url}/sim/v1/nodes/${encodeURIComponent(node)}/${verb}`, {
        method: "POST",
        headers: { authorization: `Bearer ${sim.token}` },
      });
      const body = await response.text();
      if (!response.ok) throw new Error(`sim ${verb} ${node}: ${response.status} ${body}`);
    },
  );
}
