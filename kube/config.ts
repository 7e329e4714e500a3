/**
 * Where the Kubernetes connection comes from: a kubeconfig file, in-cluster, or the default.
 * Runtime-neutral (`node:process`): the edge agent's Node executable loads it too.
 */
import process from "node:process";
import * as k8s from "@kubernetes/client-node";

/** `--kubeconfig`'s help line, the same for every command. */
export const kubeconfigHelp =
  "kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)";

/**
 * `path` wins; else in-cluster when the pod's service environment is there; else
 * `$KUBECONFIG` / `~/.kube/config` as kubectl does.
 */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
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
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "edgeroll", server, skipTLSVerify: server.startsWith("http://") }],
    users: [{ name: "edgeroll", token }],
    contexts: [{ name: "edgeroll", cluster: "edgeroll", user: "edgeroll" }],
    currentContext: "edgeroll",
  });
  return kc;
}
