/**
 * `startSim`: the simulator in-process — store, GC, CRD serving, cluster behaviour and the
 * HTTP server on 127.0.0.1 — plus the kubeconfig that kubectl and client-node use unchanged.
 */
import { stringify as toYaml } from "yaml";
import { Store } from "./store.ts";
import { ResourceRegistry } from "./resources.ts";
import { GarbageCollector } from "./gc.ts";
import { serveNamespaceDefaults } from "./service-accounts.ts";
import { serveCrds } from "./crds.ts";
import { FaultInjector, type Faults, FaultsSchema, RequestStats } from "./faults.ts";
import {
  type BehaviourOptions,
  type ClusterBehaviour,
  clusterBehaviour,
  type StartBehaviour,
} from "./behaviour.ts";
import { SimServer } from "./server.ts";
import type { UserInfo } from "./context.ts";
import { selfSignedCertificate, type ServingCertificate } from "./tls.ts";
import { Conversions } from "./conversion.ts";
import { WebhookClient } from "./webhook-client.ts";

export interface SimOptions {
  /** Simulated nodes `edge-1`…`edge-N`. Default 3. */
  nodes?: number;
  /** Zones the nodes are spread over (`topology.kubernetes.io/zone`). Default 1. */
  zones?: number;
  /** 0 picks a free port. */
  port?: number;
  /** Speed factor for simulated time (pull, start, heartbeat). Default 1. */
  speed?: number;
  /** Simulated durations other than the defaults (an image pull, a cached start, …). */
  durations?: BehaviourOptions["durations"];
  /** Where to write the kubeconfig; default a temporary file removed by `stop()`. */
  kubeconfigPath?: string;
  faults?: Partial<Faults>;
  /** Bearer tokens accepted, with who they authenticate as. Default: one admin token. */
  tokens?: Record<string, UserInfo>;
  /** The cluster's behaviour (nodes, kubelets, controllers). Default: `sim/cluster/`. */
  behaviour?: StartBehaviour;
  /** How often watches that allow bookmarks get one. Default 10 s. */
  bookmarkIntervalMs?: number;
}

export interface Sim {
  url: string;
  port: number;
  kubeconfigPath: string;
  /** The token written into the kubeconfig. */
  token: string;
  store: Store;
  server: SimServer;
  behaviour: ClusterBehaviour;
  /**
   * A kubeconfig that authenticates as the node `name` (`system:node:<name>`, group
   * `system:nodes`), restricted as kube-apiserver restricts a kubelet (sim/node-authorizer.ts),
   * through the node's own TLS listener: while the node is disconnected nothing answers there,
   * so its agents are cut off with it. Written to a temporary file that `stop()` removes.
   */
  nodeKubeconfig(name: string): Promise<string>;
  /**
   * Stops serving, as a stopped kube-apiserver: the API's listener and every node's close with
   * their connections and watches, so clients are refused (the admin API's too: it shares the
   * API's listener). The store and the cluster's behaviour run on.
   */
  stopServing(): Promise<void>;
  /** Listens again on the same ports; a node cut by `disconnect` stays cut until reconnected. */
  resumeServing(): Promise<void>;
  /** Stops everything, serving or not. */
  stop(): Promise<void>;
}

const ADMIN: UserInfo = {
  username: "sim-admin",
  uid: "sim-admin",
  groups: ["system:masters", "system:authenticated"],
};

/** A kubeconfig for `url`; with `caPem` the server's certificate is checked against it. */
export function kubeconfigYaml(url: string, token: string, caPem?: string): string {
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "edgeroll-sim",
      cluster: caPem === undefined
        ? { server: url, "insecure-skip-tls-verify": true }
        : { server: url, "certificate-authority-data": btoa(caPem) },
    }],
    users: [{ name: "edgeroll-sim", user: { token } }],
    contexts: [{
      name: "edgeroll-sim",
      context: { cluster: "edgeroll-sim", user: "edgeroll-sim", namespace: "default" },
    }],
    "current-context": "edgeroll-sim",
    preferences: {},
  });
}

/** A listener on 127.0.0.1, closed by its `abort`, opened again on its port. */
interface Listener {
  port: number;
  abort: AbortController;
  served: Deno.HttpServer;
}

/** One node's own TLS listener (its identity's way in), closed while the node is cut. */
interface NodeListener extends Listener {
  caPem: string;
}

/** Serves `handler` on 127.0.0.1:`port` (0: a free port), over TLS with `tls`. */
async function listen(
  handler: Deno.ServeHandler,
  port: number,
  tls?: { cert: string; key: string },
): Promise<Listener> {
  const abort = new AbortController();
  const { promise, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const served = Deno.serve({
    hostname: "127.0.0.1",
    port,
    ...tls,
    signal: abort.signal,
    onListen: (addr) => resolve(addr as Deno.NetAddr),
  }, handler);
  return { port: (await promise).port, abort, served };
}

/** Closes the listener and every connection on it, streams included; closed already is fine. */
async function close(listener: Listener): Promise<void> {
  if (listener.abort.signal.aborted) return;
  listener.abort.abort();
  await listener.served.finished;
}

const NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

export async function startSim(options: SimOptions = {}): Promise<Sim> {
  const store = new Store();
  const registry = new ResourceRegistry();
  for (const name of NAMESPACES) {
    store.create("namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels: { "kubernetes.io/metadata.name": name } },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
  }
  // The Service kube-apiserver keeps for itself (clients such as the e2e framework read it).
  store.create("services", {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { component: "apiserver", provider: "kubernetes" },
    },
    spec: {
      type: "ClusterIP",
      clusterIP: "10.96.0.1",
      clusterIPs: ["10.96.0.1"],
      ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: 6443 }],
      sessionAffinity: "None",
    },
  });
  const token = Object.keys(options.tokens ?? {})[0] ?? crypto.randomUUID().replaceAll("-", "");
  const tokens = new Map(Object.entries(options.tokens ?? { [token]: ADMIN }));
  const faults = new FaultInjector();
  faults.set(FaultsSchema.parse(options.faults ?? {}));
  const gc = new GarbageCollector(store);
  const stopServiceAccounts = serveNamespaceDefaults(store);
  const stopCrds = serveCrds(store, registry);
  const start = options.behaviour ?? clusterBehaviour;
  const behaviour = start(store, {
    nodes: options.nodes ?? 3,
    zones: options.zones ?? 1,
    speed: options.speed ?? 1,
    ...(options.durations ? { durations: options.durations } : {}),
  });
  let onNodeLink: (name: string, link: "disconnect" | "reconnect") => Promise<void> = () =>
    Promise.resolve();
  const webhooks = new WebhookClient();
  const conversions = new Conversions(webhooks);
  const server = new SimServer({
    store,
    registry,
    tokens,
    faults,
    stats: new RequestStats(),
    behaviour: () => behaviour,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 10_000,
    conversions,
    webhooks,
    onNodeLink: (name, link) => onNodeLink(name, link),
  });
  let apiListener = await listen(server.handle, options.port ?? 0);
  let serving = true;
  const { port } = apiListener;
  const url = `http://127.0.0.1:${port}`;
  const temporary = options.kubeconfigPath === undefined;
  const kubeconfigPath = options.kubeconfigPath ??
    await Deno.makeTempFile({ prefix: "edgeroll-sim-", suffix: ".kubeconfig" });
  await Deno.writeTextFile(kubeconfigPath, kubeconfigYaml(url, token));
  const nodeKubeconfigs: string[] = [];
  // Node identities are served over TLS (kubectl sends tokens over HTTPS only), each node on a
  // listener of its own, opened on first use: cutting a node's link closes its listener and
  // every connection on it, so the node's own agents lose the API server as the node does.
  let certificate: Promise<ServingCertificate> | undefined;
  const nodeListeners = new Map<string, NodeListener>();
  const cutNodes = new Set<string>();
  const openNodeListener = async (name: string, port = 0): Promise<NodeListener> => {
    const { cert, key } = await (certificate ??= selfSignedCertificate());
    const listener = { ...await listen(server.handle, port, { cert, key }), caPem: cert };
    nodeListeners.set(name, listener);
    return listener;
  };
  const closeNodeListener = async (name: string) => {
    const listener = nodeListeners.get(name);
    if (listener) await close(listener);
  };
  /** Opens a node's listener again on its port, unless the node is cut or the server stopped. */
  const reopenNodeListener = async (name: string) => {
    const listener = nodeListeners.get(name);
    if (listener && serving && !cutNodes.has(name)) await openNodeListener(name, listener.port);
  };
  onNodeLink = async (name, link) => {
    if (link === "disconnect") {
      cutNodes.add(name);
      await closeNodeListener(name);
    } else if (cutNodes.delete(name)) {
      await reopenNodeListener(name);
    }
  };
  const stopServing = async () => {
    serving = false;
    await close(apiListener);
    for (const name of nodeListeners.keys()) await closeNodeListener(name);
    // After the listeners: a watch a client opened while they closed ends too.
    server.closeWatches();
  };
  let stopped: Promise<void> | undefined;
  return {
    url,
    port,
    kubeconfigPath,
    token,
    store,
    server,
    behaviour,
    async nodeKubeconfig(name) {
      const nodeToken = crypto.randomUUID().replaceAll("-", "");
      tokens.set(nodeToken, {
        username: `system:node:${name}`,
        uid: `node-${name}`,
        groups: ["system:nodes", "system:authenticated"],
      });
      const path = await Deno.makeTempFile({
        prefix: `edgeroll-sim-${name}-`,
        suffix: ".kubeconfig",
      });
      nodeKubeconfigs.push(path);
      const listener = nodeListeners.get(name) ?? await openNodeListener(name);
      // A node cut before its first kubeconfig, or while the server is stopped, gets a port that
      // answers nothing until healed or resumed.
      if (cutNodes.has(name) || !serving) await closeNodeListener(name);
      await Deno.writeTextFile(
        path,
        kubeconfigYaml(`https://127.0.0.1:${listener.port}`, nodeToken, listener.caPem),
      );
      return path;
    },
    stopServing,
    async resumeServing() {
      if (serving) return;
      serving = true;
      apiListener = await listen(server.handle, port);
      for (const name of nodeListeners.keys()) await reopenNodeListener(name);
    },
    stop() {
      stopped ??= (async () => {
        await behaviour.stop();
        gc.stop();
        stopServiceAccounts();
        stopCrds();
        await stopServing();
        webhooks.close();
        // Already gone is fine: the files are ours and temporary.
        for (const path of [...nodeKubeconfigs, ...(temporary ? [kubeconfigPath] : [])]) {
          await Deno.remove(path).catch(() => {});
        }
      })();
      return stopped;
    },
  };
}
