/**
 * The node's pods as the agent last saw them, kept by list and watch (`spec.nodeName=<node>`),
 * as YurtHub keeps kubelet's: in memory, and in a file under the state directory, so `GET /pods`
 * answers while the node is cut off from the cloud and after the agent restarts. The watch
 * loop is also the agent's view of its link: connected while the list and watch succeed, cut
 * off from the first failure until the next list succeeds (retried with a capped backoff).
 */
import type { Pod } from "../api/kube-objects.ts";
import { toKubeError } from "../kube/errors.ts";
import type { LeanKubeApi } from "../kube/lean-client.ts";
import type { Logger } from "../lib/log.ts";
import { realTimers, type TimerHandle, type Timers } from "../lib/timers.ts";
import { type NodeState, readNodeState, writeNodeState } from "./state-file.ts";

/** The file `pods.json` in the state directory, as written and read back. */
interface SavedPods extends NodeState {
  /** When the pods were last known to match the API server (ms since the epoch). */
  syncedAt: number;
  resourceVersion: string;
  pods: Pod[];
}

/** Server-side watch length: a silent dead link is noticed within this plus 30 s. */
const watchSeconds = 60;
const firstRetryMs = 500;
const maxRetryMs = 10_000;
/** Changes are written at most this often: a burst of pod updates is one write. */
const saveDelayMs = 1_000;

export interface NodePodCacheDeps {
  api: LeanKubeApi;
  node: string;
  /** Where `pods.json` lives. */
  stateDir: string;
  logger: Logger;
  timers?: Timers;
}

export class NodePodCache {
  readonly #api: LeanKubeApi;
  readonly #node: string;
  readonly #file: string;
  readonly #logger: Logger;
  readonly #timers: Timers;
  readonly #pods = new Map<string, Pod>();
  #resourceVersion = "";
  /** When the pods were last known to match the API server; undefined: never. */
  #syncedAt: number | undefined;
  #connected = false;
  #listeners = new Set<() => void>();
  #podListeners = new Set<(pod: Pod) => void>();
  #saveTimer: TimerHandle | undefined;
  #watch = new AbortController();
  #stopped = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(deps: NodePodCacheDeps) {
    this.#api = deps.api;
    this.#node = deps.node;
    this.#file = `${deps.stateDir}/pods.json`;
    this.#logger = deps.logger;
    this.#timers = deps.timers ?? realTimers;
  }

  /**
   * Reads the saved pods, if any, then starts listing and watching in the background. A file
   * of another node's pods, or one that cannot be read, stops the start with its path.
   */
  start(): void {
    this.#load();
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped.abort();
    this.#watch.abort();
    await this.#loop;
    this.#flush();
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Calls `listener` each time the link comes back (and on the first successful list). */
  onConnected(listener: () => void): void {
    this.#listeners.add(listener);
  }

  /** Calls `listener` with each pod the watch brings, added or changed. */
  onPodChange(listener: (pod: Pod) => void): void {
    this.#podListeners.add(listener);
  }

  /**
   * A call of the agent's own found the API server unreachable: the link is taken as down, and
   * the watch is restarted so that the next list says when it is back.
   */
  linkFailed(err: unknown): void {
    if (!this.#connected) return;
    this.#connected = false;
    this.#logger.warn("cut off from the API server", { error: (err as Error).message });
    this.#watch.abort();
  }

  /** The node's pods, sorted by namespace and name; undefined while never known. */
  pods(): { pods: Pod[]; resourceVersion: string; ageSeconds: number } | undefined {
    if (this.#syncedAt === undefined) return undefined;
    const ageMs = this.#connected ? 0 : Math.max(0, this.#timers.now() - this.#syncedAt);
    const pods = [...this.#pods.values()].sort((a, b) =>
      key(a.metadata.namespace ?? "", a.metadata.name ?? "")
        .localeCompare(key(b.metadata.namespace ?? "", b.metadata.name ?? ""))
    );
    return { pods, resourceVersion: this.#resourceVersion, ageSeconds: ageMs / 1000 };
  }

  /** The cached pod `namespace/name`, if the node has it. */
  pod(namespace: string, name: string): Pod | undefined {
    for (const pod of this.#pods.values()) {
      if (pod.metadata.namespace === namespace && pod.metadata.name === name) return pod;
    }
    return undefined;
  }

  async #run(): Promise<void> {
    let retryMs = firstRetryMs;
    while (!this.#stopped.signal.aborted) {
      try {
        await this.#listThenWatch(() => retryMs = firstRetryMs);
      } catch (err) {
        if (this.#stopped.signal.aborted) return;
        const failure = toKubeError(err, "watch pods");
        if (failure.status === 410) continue; // Too old a resourceVersion: list again at once.
        if (this.#connected) {
          this.#connected = false;
          this.#logger.warn("cut off from the API server", { error: failure.message });
        }
        await this.#sleep(retryMs);
        retryMs = Math.min(maxRetryMs, retryMs * 2);
      }
    }
  }

  /** One list, then watches from its resourceVersion until one fails. */
  async #listThenWatch(listed: () => void): Promise<void> {
    const { items, resourceVersion } = await this.#api.listNodePods(this.#node);
    this.#pods.clear();
    for (const pod of items) this.#pods.set(pod.metadata.uid ?? "", pod);
    this.#resourceVersion = resourceVersion;
    this.#synced();
    listed();
    if (!this.#connected) {
      this.#connected = true;
      this.#logger.info("connected to the API server", { pods: items.length });
      for (const listener of this.#listeners) listener();
    }
    this.#watch = new AbortController();
    while (!this.#stopped.signal.aborted) {
      if (this.#watch.signal.aborted) throw new Error("the link failed a call");
      await this.#api.watchNodePods({
        node: this.#node,
        resourceVersion: this.#resourceVersion,
        timeoutSeconds: watchSeconds,
        signal: this.#watch.signal,
      }, (event) => {
        const { object } = event;
        this.#resourceVersion = object.metadata.resourceVersion ?? this.#resourceVersion;
        if (event.type === "DELETED") this.#pods.delete(object.metadata.uid ?? "");
        else if (event.type !== "BOOKMARK") {
          this.#pods.set(object.metadata.uid ?? "", object);
          for (const listener of this.#podListeners) listener(object);
        }
        this.#synced();
      });
      this.#synced();
    }
  }

  #synced(): void {
    this.#syncedAt = this.#timers.now();
    this.#saveTimer ??= this.#timers.setTimeout(() => this.#flush(), saveDelayMs);
  }

  /** Writes `pods.json` whole (edge/state-file.ts). */
  #flush(): void {
    this.#timers.clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    if (this.#syncedAt === undefined) return;
    const saved: SavedPods = {
      node: this.#node,
      syncedAt: this.#syncedAt,
      resourceVersion: this.#resourceVersion,
      pods: [...this.#pods.values()],
    };
    try {
      writeNodeState(this.#file, saved);
    } catch (err) {
      // The cache in memory still answers; the next change tries again.
      this.#logger.error("could not save the pod cache", {
        file: this.#file,
        error: (err as Error).message,
      });
    }
  }

  #load(): void {
    const saved = readNodeState<SavedPods>(this.#file, this.#node, "pods");
    if (!saved) return;
    for (const pod of saved.pods) this.#pods.set(pod.metadata.uid ?? "", pod);
    this.#resourceVersion = saved.resourceVersion;
    this.#syncedAt = saved.syncedAt;
    this.#logger.info("pod cache loaded", {
      file: this.#file,
      pods: saved.pods.length,
      syncedAt: new Date(saved.syncedAt).toISOString(),
    });
  }

  #sleep(ms: number): Promise<void> {
    const { signal } = this.#stopped;
    return new Promise((resolve) => {
      const done = () => {
        this.#timers.clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.#timers.setTimeout(done, ms);
      signal.addEventListener("abort", done);
    });
  }
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;
