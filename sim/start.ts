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
import { type ClusterBehaviour, clusterBehaviour, type StartBehaviour } from "./behaviour.ts";
import { SimServer } from "./server.ts";
import type { UserInfo } from "./context.ts";
import { selfSignedCertificate, type ServingCertificate } from "./tls.ts";
import { Conversions } from "./conversion.ts";

export interface SimOptions {
  /** Simulated nodes `edge-1`…`edge-N`. Default 3. */
  nodes?: number;
  /** Zones the nodes are spread over (`topology.kubernetes.io/zone`). Default 1. */
  zones?: number;
  /** 0 picks a free port. */
  port?: number;
  /** Speed factor for simulated time (pull, start, heartbeat). Default 1. */
  speed?: number;
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

/** One node's own TLS listener (its identity's way in), closed while the node is cut. */
interface NodeListener {
  port: number;
  caPem: string;
  abort: AbortController;
  served: Deno.HttpServer;
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
  });
  let onNodeLink: (name: string, link: "disconnect" | "reconnect") => Promise<void> = () =>
    Promise.resolve();
  const conversions = new Conversions();
  const server = new SimServer({
    store,
    registry,
    tokens,
    faults,
    stats: new RequestStats(),
    behaviour: () => behaviour,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 10_000,
    conversions,
    onNodeLink: (name, link) => onNodeLink(name, link),
  });
  const abort = new AbortController();
  const { promise: listening, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const http = Deno.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    signal: abort.signal,
    onListen: (addr) => resolve(addr as Deno.NetAddr),
  }, server.handle);
  const { port } = await listening;
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
    const listenerAbort = new AbortController();
    const { promise, resolve: listened } = Promise.withResolvers<Deno.NetAddr>();
    const served = Deno.serve({
      hostname: "127.0.0.1",
      port,
      cert,
      key,
      signal: listenerAbort.signal,
      onListen: (addr) => listened(addr as Deno.NetAddr),
    }, server.handle);
    const listener = { port: (await promise).port, caPem: cert, abort: listenerAbort, served };
    nodeListeners.set(name, listener);
    return listener;
  };
  const closeNodeListener = async (name: string) => {
    const listener = nodeListeners.get(name);
    if (!listener || listener.abort.signal.aborted) return;
    listener.abort.abort();
    await listener.served.finished;
  };
  onNodeLink = async (name, link) => {
    if (link === "disconnect") {
      cutNodes.add(name);
      await closeNodeListener(name);
    } else if (cutNodes.delete(name)) {
      const listener = nodeListeners.get(name);
      if (listener) await openNodeListener(name, listener.port);
    }
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
      // A node cut before its first kubeconfig gets a port that answers nothing until healed.
      if (cutNodes.has(name)) await closeNodeListener(name);
      await Deno.writeTextFile(
        path,
        kubeconfigYaml(`https://127.0.0.1:${listener.port}`, nodeToken, listener.caPem),
      );
      return path;
    },
    stop() {
      stopped ??= (async () => {
        await behaviour.stop();
        gc.stop();
        stopServiceAccounts();
        stopCrds();
        server.closeWatches();
        abort.abort();
        await http.finished;
        conversions.close();
        for (const name of nodeListeners.keys()) await closeNodeListener(name);
        // Already gone is fine: the files are ours and temporary.
        for (const path of [...nodeKubeconfigs, ...(temporary ? [kubeconfigPath] : [])]) {
          await Deno.remove(path).catch(() => {});
        }
      })();
      return stopped;
    },
  };
}
