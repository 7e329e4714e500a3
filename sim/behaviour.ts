/**
 * The seam between the API server (this room) and the simulated cluster's behaviour
 * (nodes, kubelets, scheduler, DaemonSet controller: `sim/cluster/`). The server only needs
 * these verbs; `plainNodes` is the stand-in that registers Ready nodes and nothing else.
 */
import { isoSeconds, type KubeObject, type Store } from "./store.ts";
import { KUBERNETES_VERSION } from "./discovery.ts";

export interface BehaviourOptions {
  nodes: number;
  zones: number;
  speed: number;
}

export interface ClusterBehaviour {
  stop(): void | Promise<void>;
  disconnect?(node: string): void;
  reconnect?(node: string): void;
  setNotReady?(node: string): void;
  setReady?(node: string): void;
  setSpeed?(speed: number): void;
}

export type StartBehaviour = (store: Store, options: BehaviourOptions) => ClusterBehaviour;

export const NODE_ACTIONS = {
  disconnect: "disconnect",
  reconnect: "reconnect",
  notready: "setNotReady",
  ready: "setReady",
} as const satisfies Record<string, keyof ClusterBehaviour>;

/** `edge-1`…`edge-N`, zone `zone-<i mod K>` as `topology.kubernetes.io/zone`. */
export function simulatedNode(index: number, zones: number, now: number): KubeObject {
  const name = `edge-${index}`;
  const at = isoSeconds(now);
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": `zone-${(index - 1) % Math.max(1, zones)}`,
      },
    },
    spec: {},
    status: {
      capacity: { cpu: "4", memory: "8Gi", pods: "110" },
      allocatable: { cpu: "4", memory: "8Gi", pods: "110" },
      conditions: [{
        type: "Ready",
        status: "True",
        reason: "KubeletReady",
        message: "kubelet is posting ready status",
        lastHeartbeatTime: at,
        lastTransitionTime: at,
      }],
      addresses: [
        {
          type: "InternalIP",
          address: `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
        },
        { type: "Hostname", address: name },
      ],
      nodeInfo: {
        kubeletVersion: KUBERNETES_VERSION.gitVersion,
        containerRuntimeVersion: "containerd://1.7.0-sim",
        osImage: "edgeroll sim",
        kernelVersion: "6.1.0-sim",
        operatingSystem: "linux",
        architecture: "amd64",
      },
    },
  };
}

function setReadyCondition(store: Store, node: string, ready: boolean): void {
  const object = store.get("nodes", undefined, node);
  const status = object.status as { conditions: Record<string, string>[] };
  const at = isoSeconds(store.now());
  status.conditions = status.conditions.map((c) =>
    c.type !== "Ready" ? c : {
      ...c,
      status: ready ? "True" : "False",
      reason: ready ? "KubeletReady" : "KubeletNotReady",
      lastTransitionTime: at,
    }
  );
  store.update("nodes", object);
}

/** Registers Ready nodes that never change on their own: no kubelet, no controllers. */
export const plainNodes: StartBehaviour = (store, options) => {
  for (let i = 1; i <= options.nodes; i++) {
    store.create("nodes", simulatedNode(i, options.zones, store.now()));
  }
  return {
    stop() {},
    setNotReady: (node) => setReadyCondition(store, node, false),
    setReady: (node) => setReadyCondition(store, node, true),
  };
};
