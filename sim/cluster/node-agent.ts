/**
 * The node half of the simulated kubelet: registers `edge-N` Nodes, renews each node's Lease
 * in `kube-node-lease`, and posts node status as upstream does: computed every 10 s, written
 * only when it changed or when the 5-minute report period has passed. At 5,000 nodes that is
 * about 500 Lease writes and 17 status writes per simulated second, not a status storm.
 */
import { isoSeconds, type KubeObject, StoreError } from "../store.ts";
import { LEASE_NAMESPACE, LEASES, NODES } from "./cache.ts";
import type { ClusterContext, NodeAgentState } from "./context.ts";
import { type Condition, findCondition, type Node, type NodeStatus } from "./types.ts";
import { imageNames } from "./images.ts";

export const KUBELET_VERSION = "v1.32.2";

export interface NodeFleetOptions {
  nodes: number;
  /** Spread `topology.kubernetes.io/zone=zone-1..K` round-robin; 0 adds no zone label. */
  zones?: number;
  /** Architectures handed out round-robin (default all amd64). */
  architectures?: string[];
}

export function nodeName(index: number): string {
  return `edge-${index}`;
}

/** RFC 3339 with microseconds, as Lease `renewTime` (a MicroTime) is written. */
function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/Z$/, "000Z");
}

function nodeObject(index: number, options: NodeFleetOptions, agent: NodeAgentState): Node {
  const name = agent.name;
  const architectures = options.architectures?.length ? options.architectures : ["amd64"];
  const arch = architectures[(index - 1) % architectures.length];
  const labels: Record<string, string> = {
    "beta.kubernetes.io/arch": arch,
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": arch,
    "kubernetes.io/hostname": name,
    "kubernetes.io/os": "linux",
  };
  if (options.zones && options.zones > 0) {
    const zone = `zone-${((index - 1) % options.zones) + 1}`;
    labels["topology.kubernetes.io/zone"] = zone;
  }
  const capacity = {
    cpu: "4",
    "ephemeral-storage": "61202244Ki",
    memory: "8137856Ki",
    pods: "110",
  };
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels,
      annotations: {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      },
    },
    spec: { podCIDR: agent.podSubnet, podCIDRs: [agent.podSubnet] },
    status: {
      capacity,
      allocatable: { ...capacity, "ephemeral-storage": "56403987978", memory: "8035456Ki" },
      addresses: [{ type: "InternalIP", address: agent.internalIP }, {
        type: "Hostname",
        address: name,
      }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        architecture: arch,
        bootID: `boot-${index}`,
        containerRuntimeVersion: "containerd://1.7.24",
        kernelVersion: "6.1.0-28-amd64",
        kubeProxyVersion: "",
        kubeletVersion: KUBELET_VERSION,
        machineID: `machine-${index}`,
        operatingSystem: "linux",
        osImage: "Debian GNU/Linux 12 (bookworm)",
        systemUUID: `system-${index}`,
      },
    },
  };
}

/** The conditions the kubelet reports, given its health. */
function kubeletConditions(healthy: boolean): Condition[] {
  return [
    {
      type: "MemoryPressure",
      status: "False",
      reason: "KubeletHasSufficientMemory",
      message: "kubelet has sufficient memory available",
    },
    {
      type: "DiskPressure",
      status: "False",
      reason: "KubeletHasNoDiskPressure",
      message: "kubelet has no disk pressure",
    },
    {
      type: "PIDPressure",
      status: "False",
      reason: "KubeletHasSufficientPID",
      message: "kubelet has sufficient PID available",
    },
    healthy
      ? {
        type: "Ready",
        status: "True",
        reason: "KubeletReady",
        message: "kubelet is posting ready status",
      }
      : {
        type: "Ready",
        status: "False",
        reason: "KubeletNotReady",
        message: "container runtime is down",
      },
  ];
}

/** The node status the kubelet would post now (heartbeat times left to the caller). */
function desiredStatus(
  agent: NodeAgentState,
  current: NodeStatus | undefined,
  now: string,
): NodeStatus {
  const own = kubeletConditions(agent.healthy);
  const conditions = own.map((condition) => {
    const before = findCondition(current?.conditions, condition.type);
    return {
      ...condition,
      lastHeartbeatTime: now,
      lastTransitionTime: before?.status === condition.status ? before.lastTransitionTime : now,
    };
  });
  const images = [...agent.images.entries()].slice(-50).map(([image, size]) => ({
    names: imageNames(image),
    sizeBytes: size,
  }));
  // Conditions other agents post (node-problem-detector and the like) are kept.
  const others = (current?.conditions ?? []).filter((c) => !own.some((o) => o.type === c.type));
  return { ...current, conditions: [...conditions, ...others], images };
}

/** Status equality that ignores heartbeat times, as the kubelet's nodeStatusHasChanged does. */
function sameStatus(a: NodeStatus | undefined, b: NodeStatus): boolean {
  const strip = (status: NodeStatus | undefined) =>
    JSON.stringify({
      ...status,
      conditions: status?.conditions?.map(({ lastHeartbeatTime: _, ...rest }) => rest),
    });
  return strip(a) === strip(b);
}

export interface NodeFleet {
  names(): string[];
  /** Registers `count` more nodes after the highest index so far; returns their names. */
  add(count: number): string[];
  /** Stops the node's kubelet and deletes its Node and Lease (a decommissioned machine). */
  remove(name: string): void;
  /** Posts node status now if it changed (or always, with `force`). */
  postStatus(name: string, force?: boolean): void;
  renewLease(name: string): void;
}

export function startNodeFleet(ctx: ClusterContext, options: NodeFleetOptions): NodeFleet {
  const { store, timeline, durations, agents } = ctx;
  const lastPost = new Map<string, number>();
  const leases = new Map<string, KubeObject>();

  let lastIndex = 0;
  for (let index = 1; index <= options.nodes; index++) register(index);

  /** A kubelet starts on node `edge-<index>`: registers the Node and its Lease, then beats. */
  function register(index: number): string {
    lastIndex = Math.max(lastIndex, index);
    const name = nodeName(index);
    const agent: NodeAgentState = {
      name,
      index,
      connected: true,
      healthy: true,
      images: new Map(),
      internalIP: `172.20.${index >> 8}.${index & 255}`,
      podSubnet: `10.${100 + (index >> 8)}.${index & 255}.0/24`,
      nextPodIP: 2,
    };
    agents.set(name, agent);
    const existing = ctx.cache.nodes.get(name);
    if (existing) {
      postStatus(name, true);
    } else {
      const node = nodeObject(index, options, agent);
      node.status = desiredStatus(agent, node.status, isoSeconds(timeline.now()));
      store.create(NODES, node);
      lastPost.set(name, timeline.now());
    }
    if (!store.tryGet(LEASES, LEASE_NAMESPACE, name)) {
      const node = ctx.cache.nodes.get(name)!;
      store.create(LEASES, {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: {
          name,
          namespace: LEASE_NAMESPACE,
          ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: node.metadata.uid! }],
        },
        spec: {
          holderIdentity: name,
          leaseDurationSeconds: durations.leaseDurationSeconds,
          renewTime: microTime(timeline.now()),
        },
      });
    }
    // Kubelets did not all boot in the same millisecond: spread their loops over one period.
    timeline.after(ctx.random() * durations.leaseRenewSeconds, () => leaseLoop(name));
    timeline.after(ctx.random() * durations.nodeStatusUpdateSeconds, () => statusLoop(name));
    return name;
  }

  function leaseLoop(name: string): void {
    if (!agents.has(name)) return;
    renewLease(name);
    timeline.after(durations.leaseRenewSeconds, () => leaseLoop(name));
  }

  function statusLoop(name: string): void {
    if (!agents.has(name)) return;
    postStatus(name);
    timeline.after(durations.nodeStatusUpdateSeconds, () => statusLoop(name));
  }

  function renewLease(name: string): void {
    const agent = agents.get(name);
    if (!agent?.connected) return;
    // The kubelet renews from the Lease it last wrote (a get per renewal would double the
    // cost of the busiest write in an idle fleet); someone else's change shows as a conflict.
    for (let attempt = 0; attempt < 2; attempt++) {
      const lease = leases.get(name) ?? store.tryGet(LEASES, LEASE_NAMESPACE, name);
      if (!lease) return;
      (lease.spec as { renewTime: string }).renewTime = microTime(timeline.now());
      try {
        leases.set(name, store.update(LEASES, lease));
        return;
      } catch (error) {
        leases.delete(name);
        if (error instanceof StoreError && error.code === 404) return; // node deleted, Lease collected
        if (!(error instanceof StoreError && error.code === 409)) throw error;
      }
    }
  }

  function postStatus(name: string, force = false): void {
    const agent = agents.get(name);
    const node = ctx.cache.nodes.get(name);
    if (!agent?.connected || !node) return;
    const now = timeline.now();
    const status = desiredStatus(agent, node.status, isoSeconds(now));
    const due =
      now - (lastPost.get(name) ?? -Infinity) >= timeline.realMs(durations.nodeStatusReportSeconds);
    if (!force && !due && sameStatus(node.status, status)) return;
    const wasReady = findCondition(node.status?.conditions, "Ready")?.status;
    try {
      store.update(NODES, { ...node, status }); // the store copies its input
    } catch (error) {
      if (error instanceof StoreError && error.code === 404) return; // node deleted by a user
      throw error;
    }
    lastPost.set(name, now);
    const isReady = findCondition(status.conditions, "Ready")?.status;
    if (wasReady !== undefined && wasReady !== isReady) {
      const reason = isReady === "True" ? "NodeReady" : "NodeNotReady";
      ctx.recordEvent({
        involved: node,
        type: "Normal",
        reason,
        message: `Node ${name} status is now: ${reason}`,
        component: "kubelet",
        host: name,
      });
    }
  }

  function remove(name: string): void {
    agents.delete(name);
    lastPost.delete(name);
    leases.delete(name);
    for (const [resource, namespace] of [[NODES, undefined], [LEASES, LEASE_NAMESPACE]] as const) {
      try {
        store.delete(resource, namespace, name);
      } catch (error) {
        if (!(error instanceof StoreError && error.code === 404)) throw error;
      }
    }
  }

  return {
    names: () => [...agents.keys()],
    add: (count) => Array.from({ length: count }, () => register(lastIndex + 1)),
    remove,
    postStatus,
    renewLease,
  };
}
