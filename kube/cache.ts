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
import { pullSetLabel } from "../api/image-pull.ts";
import {
  customSetResources,
  kruiseSetKind,
  setCollectionPath,
  type SetKind,
  type SetRef,
} from "../api/set-ref.ts";
import { kruiseApiVersion, kruiseKind } from "../api/kruise.ts";
import { group, version } from "../api/advanced-daemonset.ts";
import { Fingerprints } from "./fingerprints.ts";
import type { Access, KubeApi } from "./api.ts";
import {
  type CachedForm,
  type KubeList,
  type KubeObject,
  nodeCachedForm,
  podCachedForm,
  setChangeView,
  wholeObject,
} from "./wire-objects.ts";
import { type RunningWatch, startWatch, type WatchFn } from "./watcher.ts";

/** The watches a cache adds to the lists `accessOf` names (the controller's ClusterRole). */
export const cacheAccess: Access[] = [
  { group: "", resource: "nodes", verb: "watch" },
  { group: "", resource: "pods", verb: "watch" },
  { group, resource: customSetResources.advanceddaemonsets!.plural, verb: "watch" },
  { group: "apps", resource: "daemonsets", verb: "watch" },
  { group: "apps", resource: "controllerrevisions", verb: "watch" },
];

/** What the cache watches of Kruise's DaemonSets in Kruise mode (the kruise-compat overlay's). */
export const kruiseCacheAccess: Access[] = [
  {
    group: customSetResources[kruiseSetKind]!.group,
    resource: customSetResources[kruiseSetKind]!.plural,
    verb: "watch",
  },
];

/** The type a set kind's objects carry (a list's items carry none). */
const setTypes: Record<SetKind, { apiVersion: string; kind: string }> = {
  advanceddaemonsets: { apiVersion: `${group}/${version}`, kind: "AdvancedDaemonSet" },
  daemonsets: { apiVersion: "apps/v1", kind: "DaemonSet" },
  [kruiseSetKind]: { apiVersion: kruiseApiVersion, kind: kruiseKind },
};

export interface CacheChange {
  object: KubeObject;
  deleted: boolean;
}

export interface SnapshotCacheOptions {
  api: Pick<KubeApi, "listNodes" | "listPods" | "listSets" | "listRevisions">;
  /**
   * Whether the cache reads and watches from the start (default true). An inactive cache (a
   * replica that does not hold the Lease) answers undefined and opens no watch until
   * `activate()`.
   */
  active?: boolean;
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
    /** What of each object is kept (and reported to `onChange`), and read of its protobuf. */
    form: CachedForm,
    /** Lists the collection, keeping of each item what `form` keeps. */
    list: (form: CachedForm) => Promise<KubeList>,
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
      view: form.view,
      relist: async () => {
        const listed = await list(form);
        const before = new Map(this.#objects);
        this.#objects.clear();
        for (const object of listed.items) this.#objects.set(key(object), object);
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
        const cached = form.keep(object);
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
 * A collection watched for its changes: each object's `sameness` is fingerprinted, and only a
 * change of it is reported; the objects themselves are kept where asked (`keep`: the sets, which
 * a reconcile reads from here). Every list reports what it shows changed, the first one
 * everything, so a replica that starts watching looks at every set once.
 */
class ChangeWatch {
  readonly #watch: RunningWatch;
  /** The objects as last seen, where they are kept (`keep`): the sets a reconcile reads. */
  readonly #objects = new Map<string, KubeObject>();
  #open = false;

  constructor(
    path: string,
    labelSelector: string | undefined,
    type: { apiVersion: string; kind: string },
    sameness: (object: KubeObject) => unknown,
    list: () => Promise<KubeList>,
    options: SnapshotCacheOptions & { keep?: boolean },
    onChange: (change: CacheChange) => void,
  ) {
    const seen = new Fingerprints();
    const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
    const report = (raw: KubeObject, deleted: boolean) => {
      const object = { ...raw, ...type };
      const k = key(object);
      if (options.keep) {
        if (deleted) this.#objects.delete(k);
        else this.#objects.set(k, object);
      }
      if (seen.moved(k, deleted ? undefined : sameness(object), deleted)) {
        onChange({ object, deleted });
      }
    };
    this.#watch = startWatch(options.watch, {
      path,
      labelSelector,
      logger: options.logger,
      // Sets may change seldom: an idle watch is restarted after this long, at the cost of a list.
      idleMs: 5 * 60_000,
      timeoutSeconds: 240,
      relist: async () => {
        const listed = await list();
        // Gone while the watch was down: forgotten, not reported (a deleted set has nothing
        // left to reconcile; its pods go with it).
        const present = new Set(listed.items.map(key));
        seen.forgetUnless((k) => present.has(k));
        for (const k of [...this.#objects.keys()]) if (!present.has(k)) this.#objects.delete(k);
        for (const object of listed.items) report(object, false);
        return listed.resourceVersion;
      },
      onState: (state) => this.#open = state === "watching",
      onEvent: (eventType, object) => report(object, eventType === "DELETED"),
    });
  }

  /** A kept object as last seen, while the watch is open; undefined otherwise or if unseen. */
  get(namespace: string, name: string): KubeObject | undefined {
    return this.#open ? this.#objects.get(`${namespace}/${name}`) : undefined;
  }

  /** Every kept object as last seen, while the watch is open; undefined otherwise. */
  all(): KubeObject[] | undefined {
    return this.#open ? [...this.#objects.values()] : undefined;
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
  readonly #revisions = new Map<string, CollectionCache>();
  /** The kinds of set discovery serves, and the watch of each that is open. */
  #setKinds: SetKind[] = [];
  readonly #sets = new Map<SetKind, ChangeWatch>();
  #pulls: ChangeWatch | undefined;
  #active: boolean;
  #closed = false;

  constructor(options: SnapshotCacheOptions) {
    this.#options = options;
    this.#active = options.active ?? true;
  }

  /** Whether the cache reads and watches (see `SnapshotCacheOptions.active`). */
  get active(): boolean {
    return this.#active;
  }

  /**
   * Starts reading and watching: the nodes, the served kinds of set and image pull pods at once,
   * so their changes call reconciles without a relay (the relay's watches, in-process).
   */
  activate(): void {
    if (this.#closed) return;
    this.#active = true;
    this.nodes();
    this.#pulls ??= new ChangeWatch(
      "/api/v1/pods",
      pullSetLabel,
      { apiVersion: "v1", kind: "Pod" },
      (pod) => pod,
      () => this.#options.api.listPods({ labelSelector: pullSetLabel }),
      this.#options,
      (change) => this.#notify(change),
    );
    this.#watchSets();
  }

  /**
   * The kinds of set discovery serves: each is watched while the cache is active, and one no
   * longer served stops being watched (a watch of a CRD gone would only answer 404).
   */
  setKindsServed(kinds: SetKind[]): void {
    this.#setKinds = [...kinds];
    if (this.#active && !this.#closed) this.#watchSets();
  }

  #watchSets() {
    for (const [kind, watch] of this.#sets) {
      if (!this.#setKinds.includes(kind)) {
        this.#sets.delete(kind);
        void watch.stop();
      }
    }
    for (const kind of this.#setKinds) {
      if (this.#sets.has(kind)) continue;
      this.#sets.set(
        kind,
        new ChangeWatch(
          setCollectionPath(kind),
          undefined,
          setTypes[kind],
          setChangeView,
          () => this.#options.api.listSets({ kind }),
          { ...this.#options, keep: true },
          (change) => this.#notify(change),
        ),
      );
    }
  }

  /** Calls `listener` for every change any cache applies. */
  onChange(listener: (change: CacheChange) => void): void {
    this.#listeners.push(listener);
  }

  /** All nodes; the first call starts the cache and answers undefined. */
  nodes(): KubeObject[] | undefined {
    if (this.#closed || !this.#active) return undefined;
    this.#nodes ??= new CollectionCache(
      "/api/v1/nodes",
      undefined,
      nodeCachedForm,
      (form) => this.#options.api.listNodes({ form }),
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
    return this.#collection(this.#pods, "pods", namespace, labelSelector, notOlderThan);
  }

  /** A namespaced collection's cache by selector in `caches`, started on its first read. */
  #collection(
    caches: Map<string, CollectionCache>,
    resource: "pods" | "controllerrevisions",
    namespace: string,
    labelSelector: string,
    notOlderThan?: string,
  ): KubeList | undefined {
    if (this.#closed || !this.#active) return undefined;
    const now = this.#now();
    this.#stopUnused(now);
    const key = `${namespace}?${labelSelector}`;
    let cache = caches.get(key);
    if (!cache) {
      const list = resource === "pods"
        ? (form: CachedForm) => this.#options.api.listPods({ namespace, labelSelector, form })
        : () => this.#options.api.listRevisions({ namespace, labelSelector });
      cache = new CollectionCache(
        `${resource === "pods" ? "/api/v1" : "/apis/apps/v1"}/namespaces/${
          encodeURIComponent(namespace)
        }/${resource}`,
        labelSelector || undefined,
        resource === "pods" ? podCachedForm : wholeObject,
        list,
        this.#options,
        (change) => this.#notify(change),
      );
      caches.set(key, cache);
    }
    return cache.read(now, notOlderThan);
  }

  /**
   * The set as its watch last saw it, when that is at least `notOlderThan` (the resourceVersion
   * of this controller's own last write of it: a claim made on an older one would only be lost).
   * Undefined while inactive, while the watch is not open, or when the watch has not seen it.
   */
  set(ref: SetRef, notOlderThan?: string): KubeObject | undefined {
    if (this.#closed || !this.#active) return undefined;
    const object = this.#sets.get(ref.kind)?.get(ref.namespace, ref.name);
    if (!object) return undefined;
    const version = object.metadata.resourceVersion ?? "";
    if (notOlderThan !== undefined && !isAtLeast(version, notOlderThan)) return undefined;
    return structuredClone(object);
  }

  /**
   * Every set of every kind discovery last served, as the watches see them, while each of those
   * watches is open; undefined otherwise (inactive, no kind learned yet, a watch down). What a
   * fan-out to every set needs, without a discovery request and a list per kind for each node
   * that changes (a cut node changes several times: NotReady, tainted, back).
   */
  sets(): { kind: SetKind; object: KubeObject }[] | undefined {
    if (this.#closed || !this.#active || this.#setKinds.length === 0) return undefined;
    const found: { kind: SetKind; object: KubeObject }[] = [];
    for (const kind of this.#setKinds) {
      const objects = this.#sets.get(kind)?.all();
      if (!objects) return undefined;
      for (const object of objects) found.push({ kind, object });
    }
    return found;
  }

  /**
   * A set's ControllerRevisions (by namespace and selector); the first call starts that cache.
   * Read without a freshness bound: edgeroll alone writes them, each under a name its content
   * decides, so a plan from a cache one write behind creates one that exists (AlreadyExists is
   * done) or deletes one gone (NotFound is done).
   */
  revisions(namespace: string, labelSelector: string): KubeList | undefined {
    return this.#collection(this.#revisions, "controllerrevisions", namespace, labelSelector);
  }

  /** How many collections are cached (nodes counting as one). */
  get size(): number {
    return this.#pods.size + this.#revisions.size + (this.#nodes ? 1 : 0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const caches = [
      ...this.#pods.values(),
      ...this.#revisions.values(),
      ...(this.#nodes ? [this.#nodes] : []),
      ...this.#sets.values(),
      ...(this.#pulls ? [this.#pulls] : []),
    ];
    this.#pods.clear();
    this.#revisions.clear();
    this.#sets.clear();
    this.#nodes = undefined;
    this.#pulls = undefined;
    await Promise.all(caches.map((c) => c.stop()));
  }

  #now(): number {
    return (this.#options.clock ?? Date.now)();
  }

  /** A set deleted or reconciled no more keeps no watch open. */
  #stopUnused(now: number) {
    const unusedMs = this.#options.unusedMs ?? 15 * 60_000;
    for (const caches of [this.#pods, this.#revisions]) {
      for (const [key, cache] of caches) {
        if (now - cache.lastRead > unusedMs) {
          caches.delete(key);
          void cache.stop();
        }
      }
    }
  }

  #notify(change: CacheChange) {
    for (const listener of this.#listeners) listener(change);
  }
}
