/**
 * What `bench/peers.ts` measures of each contender, every figure from a source outside it: the
 * API server's audit log (requests by user), the forwarder its connections pass through (bytes
 * read), /proc (CPU seconds, peak resident memory) and a watch of the set's pods (how many nodes
 * were without an available pod, and when the rollout ended).
 */
import * as k8s from "@kubernetes/client-node";
import { residentMiB } from "../tests/processes.ts";
import { clientNodeWatch, type RunningWatch, startWatch } from "../kube/watcher.ts";
import { createLogger } from "../lib/log.ts";
import { PodsByNode } from "./pods-by-node.ts";
import { percentile } from "./stats.ts";

/** The audit policy: who is logged (the contenders' users), at Metadata level; nobody else. */
export function auditPolicy(users: string[]) {
  return {
    apiVersion: "audit.k8s.io/v1",
    kind: "Policy",
    // A watch is counted when it starts (ResponseStarted), any other request when it ends.
    omitStages: ["RequestReceived"],
    rules: [{ level: "Metadata", users }, { level: "None" }],
  };
}

const writeVerbs = new Set(["create", "update", "patch", "delete", "deletecollection"]);

export interface RequestCounts {
  requests: number;
  writes: number;
  /** Writes refused with 409 Conflict (a stale resourceVersion, a name taken): counted in writes. */
  conflicts: number;
  /** By verb and resource: `create pods`, `update daemonsets/status`. */
  byKind: Record<string, number>;
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
}

/**
 * The requests `users` made that the API server received within [from, to], from the audit log's
 * lines after byte `offset` (its size when the window opened: events are written up to a second
 * after they end, so earlier ones may follow it and are told apart by their time).
 */
export async function auditedRequests(
  logPath: string,
  offset: number,
  users: string[],
  from: number,
  to: number,
): Promise<RequestCounts> {
  const file = await Deno.open(logPath);
  try {
    await file.seek(offset, Deno.SeekMode.Start);
    const text = await new Response(file.readable).text();
    const counts: RequestCounts = { requests: 0, writes: 0, conflicts: 0, byKind: {} };
    for (const line of text.split("\n")) {
      if (!line) continue;
      const event = JSON.parse(line) as AuditEvent;
      const counted = event.verb === "watch"
        ? event.stage === "ResponseStarted"
        : event.stage === "ResponseComplete";
      const received = Date.parse(event.requestReceivedTimestamp);
      if (!counted || !users.includes(event.user.username) || received < from || received > to) {
        continue;
      }
      counts.requests++;
      if (writeVerbs.has(event.verb)) {
        counts.writes++;
        if (event.responseStatus?.code === 409) counts.conflicts++;
      }
      const { resource = "?", subresource } = event.objectRef ?? {};
      const kind = `${event.verb} ${resource}${subresource ? `/${subresource}` : ""}`;
      counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
    }
    return counts;
  } finally {
    try {
      file.close();
    } catch { /* closed with its stream */ }
  }
}

/** Clock ticks per second of /proc's CPU times (getconf CLK_TCK). */
const clockTicks = Number(
  new TextDecoder().decode(new Deno.Command("getconf", { args: ["CLK_TCK"] }).outputSync().stdout),
);

/**
 * CPU seconds (user and system) `pid` has used so far; undefined once it is gone. Deno reads
 * /proc/<pid> only with every permission (`-A`); without, this throws rather than reading zero.
 */
export function cpuSeconds(pid: number): number | undefined {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  // The fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** The highest resident memory of each process so far, in MiB (VmHWM); each must still run. */
export function peakResidentMiB(pids: number[]): number[] {
  return pids.map((pid) => {
    const peak = residentMiB(pid, "VmHWM");
    if (peak === undefined) throw new Error(`no /proc/${pid}/status: gone, or no -A`);
    return peak;
  });
}

/** A process's load over a window: CPU seconds spent and resident memory's peak. */
export interface ComponentLoad {
  cpuSeconds: number;
  peakMiB: number;
}

/**
 * The load of processes beside the contender while it rolls: the control plane's (issue 34: a
 * controller that saves its own memory by loading the API server is not cheaper), and the
 * harness's (kwok, the bench itself), which on two cores share the CPU with it. Each process's
 * CPU seconds over the window and its highest resident memory, sampled every `everyMs` (VmHWM
 * would hold the peak of the process's whole life, earlier contenders' included).
 */
export class ProcessLoad {
  readonly #cpuBefore: number[];
  readonly #peak: number[];
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(private readonly components: { name: string; pid: number }[], everyMs = 250) {
    this.#cpuBefore = components.map((c) => this.#cpu(c));
    this.#peak = components.map(() => 0);
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), everyMs);
  }

  stop(): Record<string, ComponentLoad> {
    clearInterval(this.#timer);
    this.#sample();
    return Object.fromEntries(this.components.map((c, i) => [c.name, {
      cpuSeconds: this.#cpu(c) - this.#cpuBefore[i],
      peakMiB: this.#peak[i],
    }]));
  }

  #cpu(component: { name: string; pid: number }): number {
    const seconds = cpuSeconds(component.pid);
    if (seconds === undefined) throw new Error(`${component.name} (pid ${component.pid}) is gone`);
    return seconds;
  }

  #sample() {
    this.components.forEach((c, i) => {
      this.#peak[i] = Math.max(this.#peak[i], residentMiB(c.pid) ?? 0);
    });
  }
}

interface Pod {
  metadata: { uid: string; creationTimestamp?: string; deletionTimestamp?: string };
  spec: { nodeName?: string; containers: { image: string }[] };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
}

const available = (pod: Pod) =>
  !pod.metadata.deletionTimestamp &&
  (pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false);

/** Whether a node has an available pod, one of the image expected, and one of another image. */
interface NodeState {
  available: boolean;
  current: boolean;
  stale: boolean;
}

/** When the bench first saw a node's old pod deleted, its new pod, and the new pod available. */
interface NodeTimes {
  oldDeleted?: number;
  newSeen?: number;
  newAvailable?: number;
  /** The new pod's Ready transition after its creation, by the API server's timestamps (ms). */
  createdToReady?: number;
}

/** Seconds over the nodes that went through both steps. */
export interface Span {
  nodes: number;
  p50: number;
  p90: number;
}

export interface PodPhases {
  oldDeletedToNew: Span;
  newToAvailable: Span;
  /** The new pod's creation to its Ready, on the API server's clock (1 s resolution). */
  createdToReady: Span;
}

/** A watch interrupted this many times in a row, with no event between, fails the bench. */
const maxInterruptions = 20;

/**
 * The pods of a namespace from a list and a watch: after each change, how many of `nodes` lack
 * an available pod (the most ever is kept), and whether every one of them runs `image` available
 * with no pod of another image left (the rollout's end, the first time it is seen). The watch is
 * kube/watcher.ts's: one the API server closes (it drops a watcher that falls behind a burst of
 * 250 pod creations) resumes from the last resourceVersion seen, one whose version expired lists
 * again, with the same capped backoff as the controller's caches.
 */
export class RolloutWatch {
  /** The pods by uid and node, and each watched node's state: an event costs its node alone. */
  readonly #pods = new PodsByNode<Pod>((pod) => pod.metadata.uid);
  readonly #states = new Map<string, NodeState>();
  #unavailable = 0;
  #updated = 0;
  #nodes: Set<string>;
  #image = "";
  #watch?: RunningWatch;
  #waiting?: (done: boolean | Error) => void;
  #ended?: Error;
  #interruptions = 0;
  /** Per watched node, when the bench saw its pods move in the rollout under way (ms). */
  #seen = new Map<string, NodeTimes>();
  /** The most nodes seen updated at once since `expect`, and when that count last grew (ms). */
  #mostUpdated = 0;
  #progressAt = 0;
  maxUnavailable = 0;
  updated = 0;
  doneAt?: number;

  constructor(
    private readonly kc: k8s.KubeConfig,
    private readonly namespace: string,
    nodes: string[],
  ) {
    this.#nodes = new Set(nodes);
  }

  /** Resolves once the pods are listed and the watch is open. */
  async start(): Promise<void> {
    const core = this.kc.makeApiClient(k8s.CoreV1Api);
    const open = Promise.withResolvers<void>();
    this.#watch = startWatch(clientNodeWatch(this.kc), {
      path: `/api/v1/namespaces/${this.namespace}/pods`,
      logger: createLogger({}, { component: "bench pod watch", namespace: this.namespace }),
      relist: async () => {
        const list = await core.listNamespacedPod({ namespace: this.namespace });
        this.#pods.clear();
        for (const pod of list.items) this.#pods.set(pod as Pod);
        this.#recount();
        return list.metadata!.resourceVersion!;
      },
      onEvent: (type, object) => {
        this.#interruptions = 0;
        const pod = object as unknown as Pod;
        const before = type === "DELETED"
          ? this.#pods.delete(pod.metadata.uid)
          : this.#pods.set(pod);
        if (before !== undefined) this.#refresh(before);
        this.#refresh(pod.spec.nodeName);
        this.#timed(pod, type === "DELETED");
        this.#measured();
      },
      onState: (state) => {
        if (state === "watching") return open.resolve();
        if (++this.#interruptions > maxInterruptions) this.#end();
      },
    });
    await open.promise;
  }

  /** Watches opened after the first: each a resume, a list again, or a restart after silence. */
  get restarts(): number {
    return Math.max(0, (this.#watch?.stats.starts ?? 1) - 1);
  }

  /** A watch that cannot be resumed leaves the figures stale: whoever waits hears of it. */
  #end() {
    this.#ended = new Error(
      `the watch of ${this.namespace}'s pods was interrupted ${maxInterruptions} times in a row`,
    );
    this.#waiting?.(this.#ended);
    this.#watch?.stop();
  }

  /** From now on the rollout is to `image` on `nodes` (default: the same nodes); measured afresh. */
  expect(image: string, nodes?: string[]): void {
    this.#image = image;
    if (nodes) this.#nodes = new Set(nodes);
    this.maxUnavailable = 0;
    this.doneAt = undefined;
    this.#mostUpdated = 0;
    this.#progressAt = Date.now();
    this.#seen.clear();
    this.#recount();
  }

  /**
   * Where a node's time went in the rollout under way, over the nodes seen through both steps:
   * from its old pod's deletion to its new pod (the controller's reaction and the kubelet's
   * confirmation; negative where the new pod came first, as under surge) and from the new pod to
   * its availability (the kubelet's start, kwok's delay), both as the bench saw them; and the
   * latter again on the API server's own timestamps. Seconds, median and 90th percentile.
   */
  podPhases(): PodPhases {
    const span = (ms: (t: NodeTimes) => number | undefined): Span => {
      const xs = [...this.#seen.values()].map(ms).filter((x) => x !== undefined && !isNaN(x))
        .map((x) => x! / 1000);
      return { nodes: xs.length, p50: percentile(xs, 0.5), p90: percentile(xs, 0.9) };
    };
    const between = (from: keyof NodeTimes, to: keyof NodeTimes) => (t: NodeTimes) =>
      t[from] !== undefined && t[to] !== undefined ? t[to]! - t[from]! : undefined;
    return {
      oldDeletedToNew: span(between("oldDeleted", "newSeen")),
      newToAvailable: span(between("newSeen", "newAvailable")),
      createdToReady: span((t) => t.createdToReady),
    };
  }

  /** Notes the first time a watched node's old pod leaves, its new pod shows, and is available. */
  #timed(pod: Pod, deleted: boolean) {
    const node = pod.spec.nodeName;
    if (!this.#image || node === undefined || !this.#nodes.has(node)) return;
    const times = this.#seen.get(node) ?? {};
    this.#seen.set(node, times);
    const now = Date.now();
    if (pod.spec.containers[0].image !== this.#image) {
      if (deleted || pod.metadata.deletionTimestamp) times.oldDeleted ??= now;
      return;
    }
    times.newSeen ??= now;
    if (!this.#states.get(node)?.current || times.newAvailable !== undefined) return;
    times.newAvailable = now;
    // The same span on the API server's clock (whole seconds): the bench's own lag left out.
    const readySince = pod.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime;
    if (readySince && pod.metadata.creationTimestamp) {
      times.createdToReady = Date.parse(readySince) - Date.parse(pod.metadata.creationTimestamp);
    }
  }

  /** Resolves true when the rollout ends, false after `timeoutMs`. */
  /**
   * True once every node is updated; false once `stalledMs` pass with no more nodes updated than
   * before, or `capMs` in all. A contender that goes on updating nodes is waited for: at its
   * default 20 requests a second kube-controller-manager updates 5,000 nodes in about ten minutes,
   * which a deadline of 20 times the physical minimum cut at 4,000 and called stalled.
   */
  async until({ stalledMs, capMs }: { stalledMs: number; capMs: number }): Promise<boolean> {
    if (this.#ended) throw this.#ended;
    if (this.doneAt !== undefined) return true;
    const started = Date.now();
    let timer: ReturnType<typeof setInterval> | undefined;
    const done = await new Promise<boolean | Error>((resolve) => {
      this.#waiting = resolve;
      timer = setInterval(() => {
        const now = Date.now();
        if (now - this.#progressAt > stalledMs || now - started > capMs) resolve(false);
      }, 1000);
    });
    clearInterval(timer);
    this.#waiting = undefined;
    if (done instanceof Error) throw done;
    return done;
  }

  async stop(): Promise<void> {
    await this.#watch?.stop();
  }

  /** A watched node's state from its pods. */
  #stateOf(node: string): NodeState {
    const state = { available: false, current: false, stale: false };
    for (const pod of this.#pods.on(node)) {
      const isCurrent = pod.spec.containers[0].image === this.#image;
      if (available(pod)) {
        state.available = true;
        if (isCurrent) state.current = true;
      }
      if (!isCurrent && !pod.metadata.deletionTimestamp) state.stale = true;
    }
    return state;
  }

  #count(state: NodeState, sign: 1 | -1) {
    if (!state.available) this.#unavailable += sign;
    if (state.current && !state.stale) this.#updated += sign;
  }

  /** Recounts one node after a change of its pods. */
  #refresh(node: string | undefined) {
    if (node === undefined || !this.#nodes.has(node)) return;
    const before = this.#states.get(node);
    if (before) this.#count(before, -1);
    const state = this.#stateOf(node);
    this.#states.set(node, state);
    this.#count(state, 1);
  }

  /** Recounts every node: a new image, new nodes, a new list. */
  #recount() {
    this.#states.clear();
    this.#unavailable = 0;
    this.#updated = 0;
    for (const node of this.#nodes) this.#refresh(node);
    this.#measured();
  }

  #measured(): void {
    this.maxUnavailable = Math.max(this.maxUnavailable, this.#unavailable);
    this.updated = this.#updated;
    if (this.#updated > this.#mostUpdated) {
      this.#mostUpdated = this.#updated;
      this.#progressAt = Date.now();
    }
    if (this.#image && this.doneAt === undefined && this.#updated === this.#nodes.size) {
      this.doneAt = Date.now();
      this.#waiting?.(true);
    }
  }
}

interface Node {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[] };
}

const isReady = (node: Node) =>
  node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/**
 * The nodes' Ready condition from a list and a watch: which of the nodes expected connected turned
 * NotReady since `expect` (kwok's heartbeats falling behind the load; the node lifecycle
 * controller then marks their pods unready, and a controller that skips NotReady nodes waits for
 * them), and the most of them NotReady at once.
 */
export class NodeReadyWatch {
  readonly #ready = new Map<string, boolean>();
  #nodes = new Set<string>();
  #notReady = 0;
  #watch?: RunningWatch;
  readonly turnedNotReady = new Set<string>();
  maxNotReady = 0;

  constructor(private readonly kc: k8s.KubeConfig) {}

  /** Resolves once the nodes are listed and the watch is open. */
  async start(): Promise<void> {
    const core = this.kc.makeApiClient(k8s.CoreV1Api);
    const open = Promise.withResolvers<void>();
    this.#watch = startWatch(clientNodeWatch(this.kc), {
      path: "/api/v1/nodes",
      logger: createLogger({}, { component: "bench node watch" }),
      relist: async () => {
        const list = await core.listNode();
        this.#ready.clear();
        for (const node of list.items) this.#ready.set(node.metadata!.name!, isReady(node as Node));
        this.#recount();
        return list.metadata!.resourceVersion!;
      },
      onEvent: (type, object) => {
        const node = object as unknown as Node;
        const { name } = node.metadata;
        const was = this.#ready.get(name);
        const ready = type !== "DELETED" && isReady(node);
        this.#ready.set(name, ready);
        if (!this.#nodes.has(name) || was === ready) return;
        this.#notReady += ready ? -1 : 1;
        if (!ready) this.turnedNotReady.add(name);
        this.maxNotReady = Math.max(this.maxNotReady, this.#notReady);
      },
      onState: (state) => state === "watching" && open.resolve(),
    });
    await open.promise;
  }

  /** From now on `nodes` are expected Ready: counted afresh. */
  expect(nodes: string[]): void {
    this.#nodes = new Set(nodes);
    this.turnedNotReady.clear();
    this.#recount();
  }

  #recount() {
    this.#notReady = [...this.#nodes].filter((n) => this.#ready.get(n) !== true).length;
    this.maxNotReady = this.#notReady;
  }

  async stop(): Promise<void> {
    await this.#watch?.stop();
  }
}
