/**
 * Informers for a long-running controller: the nodes, and each set's pods, kept by a LIST and
 * a watch from its resourceVersion, so a reconcile reads them in memory instead of listing
 * and parsing the whole fleet again (at 1,000 nodes that parse kept the controller's core
 * busy; docs/decisions/0016). A cache answers only while its watch is open: before its first
 * list, and between a failed watch and the next, it answers undefined and the reader lists.
 *
 * Only a copy of what the API server says: no rollout state lives here. A stale read is what
 * the expectations in the set's status are for (as upstream's informer caches), with one
 * more guard: the status records the pods' resourceVersion it was planned from, and a pod
 * cache older than that is not read (another replica, or this one's last LIST, saw more).
 * Every change a cache applies is reported to `onChange`, so the reconcile it calls for reads
 * the cache after that change.
 */
import type { Logger } from "../lib/log.ts";
import type { Access, KubeApi } from "./api.ts";
import { type KubeList, type KubeObject, nodeAsCached, podAsCached } from "./objects.ts";
import { type RunningWatch, startWatch, type WatchFn } from "./watcher.ts";

/** The watches a cache adds to the lists `accessOf` names (the controller's ClusterRole). */
export const cacheAccess: Access[] = [
  { group: "", resource: "nodes", verb: "watch" },
  { group: "", resource: "pods", verb: "watch" },
];

export interface CacheChange {
  object: KubeObject;
  deleted: boolean;
}

export interface SnapshotCacheOptions {
  api: Pick<KubeApi, "listNodes" | "listPods">;
  watch: WatchFn;
  logger: Logger;
  /** A set's pod cache not read for this long is stopped (default 15 minutes). */
  unusedMs?: number;
  /** Milliseconds since the epoch (tests). */
  clock?: () => number;
}

/** One collection, listed then watched. */
class CollectionCache {
  readonly #objects = new Map<string, KubeObject>();
  #items: KubeObject[] | undefined;
  #open = false;
  readonly #watch: RunningWatch;
  lastRead: number;

  constructor(
    path: string,
    labelSelector: string | undefined,
    /** What of each object is kept (and reported to `onChange`). */
    asCached: (object: KubeObject) => KubeObject,
    list: () => Promise<{ items: KubeObject[]; resourceVersion: string }>,
    options: SnapshotCacheOptions,
    onChange: (change: CacheChange) => void,
  ) {
    this.lastRead = (options.clock ?? Date.now)();
    const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    this.#watch = startWatch(options.watch, {
      path,
      labelSelector,
      logger: options.logger,
      // Nodes and pods change often; silence this long means a stalled watch.
      idleMs: 60_000,
      timeoutSeconds: 240,
      relist: async () => {
        const listed = await list();
        const before = new Map(this.#objects);
        this.#objects.clear();
        for (const object of listed.items) this.#objects.set(key(object), asCached(object));
        this.#items = undefined;
        // A relist after 410 Gone stands for the events the watch missed, as an informer's
        // Replace: what it shows changed or gone is reported, or a reconcile that read the
        // cache before would wait for a resync (#21: 30 s at 99 of 100). The first list
        // replaces nothing anyone read: readers listed for themselves until then.
        if (before.size > 0) {
          for (const [k, object] of this.#objects) {
            const old = before.get(k);
            if (old?.metadata.resourceVersion !== object.metadata.resourceVersion) {
              onChange({ object, deleted: false });
            }
          }
          for (const [k, object] of before) {
            if (!this.#objects.has(k)) onChange({ object, deleted: true });
          }
        }
        return listed.resourceVersion;
      },
      onState: (state) => this.#open = state === "watching",
      onEvent: (type, object) => {
        const deleted = type === "DELETED";
        const cached = asCached(object);
        if (deleted) this.#objects.delete(key(object));
        else this.#objects.set(key(object), cached);
        this.#items = undefined;
        onChange({ object: cached, deleted });
      },
    });
  }

  /**
   * The objects as last seen, with the resourceVersion they are current at; undefined while
   * the watch is not open or when that is older than `notOlderThan`.
   */
  read(now: number, notOlderThan?: string): KubeList | undefined {
    this.lastRead = now;
    const resourceVersion = this.#watch.resourceVersion;
    if (!this.#open || resourceVersion === undefined) return undefined;
    if (notOlderThan !== undefined && !isAtLeast(resourceVersion, notOlderThan)) return undefined;
    return { items: this.#items ??= [...this.#objects.values()], resourceVersion };
  }

  stop(): Promise<void> {
    return this.#watch.stop();
  }
}

/**
 * Whether resourceVersion `rv` is at least `min`. Kubernetes calls them opaque; every built-in
 * store hands out etcd's revision, one counter for all objects, so they compare as integers.
 * Anything else is not known to be newer: the reader lists.
 */
export function isAtLeast(rv: string, min: string): boolean {
  if (!/^\d+$/.test(rv) || !/^\d+$/.test(min)) return false;
  return BigInt(rv) >= BigInt(min);
}

export class SnapshotCache {
  readonly #options: SnapshotCacheOptions;
  readonly #listeners: ((change: CacheChange) => void)[] = [];
  #nodes: CollectionCache | undefined;
  readonly #pods = new Map<string, CollectionCache>();
  #closed = false;

  constructor(options: SnapshotCacheOptions) {
    this.#options = options;
  }

  /** Calls `listener` for every change any cache applies. */
  onChange(listener: (change: CacheChange) => void): void {
    this.#listeners.push(listener);
  }

  /** All nodes; the first call starts the cache and answers undefined. */
  nodes(): KubeObject[] | undefined {
    if (this.#closed) return undefined;
    this.#nodes ??= new CollectionCache(
      "/api/v1/nodes",
      undefined,
      nodeAsCached,
      () => this.#options.api.listNodes({}),
      this.#options,
      (change) => this.#notify(change),
    );
    return this.#nodes.read(this.#now())?.items;
  }

  /**
   * A set's pods (by namespace and selector) and the resourceVersion they are current at,
   * when that is at least `notOlderThan`; the first call starts that cache.
   */
  pods(namespace: string, labelSelector: string, notOlderThan?: string): KubeList | undefined {
    if (this.#closed) return undefined;
    const now = this.#now();
    this.#stopUnused(now);
    const key = `${namespace}?${labelSelector}`;
    let cache = this.#pods.get(key);
    if (!cache) {
      cache = new CollectionCache(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        labelSelector || undefined,
        podAsCached,
        () => this.#options.api.listPods({ namespace, labelSelector }),
        this.#options,
        (change) => this.#notify(change),
      );
      this.#pods.set(key, cache);
    }
    return cache.read(now, notOlderThan);
  }

  /** How many collections are cached (nodes counting as one). */
  get size(): number {
    return this.#pods.size + (this.#nodes ? 1 : 0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const caches = [...this.#pods.values(), ...(this.#nodes ? [this.#nodes] : [])];
    this.#pods.clear();
    this.#nodes = undefined;
    await Promise.all(caches.map((c) => c.stop()));
  }

  #now(): number {
    return (this.#options.clock ?? Date.now)();
  }

  /** A set deleted or reconciled no more keeps no watch open. */
  #stopUnused(now: number) {
    const unusedMs = this.#options.unusedMs ?? 15 * 60_000;
    for (const [key, cache] of this.#pods) {
      if (now - cache.lastRead > unusedMs) {
        this.#pods.delete(key);
        void cache.stop();
      }
    }
  }

  #notify(change: CacheChange) {
    for (const listener of this.#listeners) listener(change);
  }
}
