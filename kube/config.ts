/**
 * Where the Kubernetes connection comes from: a kubeconfig file, in-cluster, or the default.
 * Runtime-neutral (`node:process`): the edge agent's Node executable loads it too.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import * as k8s from "@kubernetes/client-node";

type RequestContext = Parameters<k8s.KubeConfig["applySecurityAuthentication"]>[0];
type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/**
 * A KubeConfig whose requests share their connections. client-node 2.0 makes a new undici
 * Agent for every request to a TLS server (or through a proxy), so no connection was ever
 * reused: a reconcile opened about 1.5 new connections and a 1,000-node rollout held 1,397
 * descriptors (#21). Every request here gets the one Agent made for the current TLS material,
 * kept alive; a new Agent is made only when the material changes (a rotated kubelet
 * certificate) and the old one closes once its requests end. Plain HTTP (sim) never had an
 * Agent per request: undici's global pool serves it.
 */
export class PooledKubeConfig extends k8s.KubeConfig {
  #pool?: { material: string; dispatcher: Dispatcher };

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    const material = this.#tlsMaterial();
    if (this.#pool?.material === material) {
      context.setDispatcher(this.#pool.dispatcher);
      fresh.close().catch(() => {/* never connected */});
      return;
    }
    const old = this.#pool;
    this.#pool = { material, dispatcher: fresh };
    old?.dispatcher.close().catch(() => {/* its requests failed on their own */});
  }

  /** What the Agent's connections are made with: CA, client certificate and key, proxy. */
  #tlsMaterial(): string {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    const read = (file?: string, data?: string) => file ? readFileSync(file, "utf8") : data ?? "";
    return JSON.stringify([
      cluster?.server,
      cluster?.proxyUrl,
      cluster?.skipTLSVerify,
      cluster?.tlsServerName,
      read(cluster?.caFile, cluster?.caData),
      read(user?.certFile, user?.certData),
      read(user?.keyFile, user?.keyData),
    ]);
  }
}

export { kubeconfigHelp } from "./lean-config.ts";
/** What the rest of edgeroll names a kubeconfig by: client-node stays inside kube/. */
export type { KubeConfig } from "@kubernetes/client-node";

/**
 * `path` wins; else in-cluster when the pod's service environment is there; else
 * `$KUBECONFIG` / `~/.kube/config` as kubectl does.
 */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new PooledKubeConfig();
  if (path) {
    kc.loadFromFile(path);
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
    kc.loadFromCluster();
  } else {
    kc.loadFromDefault();
  }
  if (!kc.getCurrentCluster()) {
    throw new Error(`no current cluster in kubeconfig${path ? ` ${path}` : ""}`);
  }
  return kc;
}

/**
 * A config for a plain-HTTP server on loopback (the simulator, test servers). client-node
 * refuses `http://` unless the cluster entry skips TLS verification.
 */
export function kubeConfigForServer(server: string, token?: string): k8s.KubeConfig {
  const kc = new PooledKubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "edgeroll", server, skipTLSVerify: server.startsWith("http://") }],
    users: [{ name: "edgeroll", token }],
    contexts: [{ name: "edgeroll", cluster: "edgeroll", user: "edgeroll" }],
    currentContext: "edgeroll",
  });
  return kc;
}
