/**
 * The simulator's object store: what etcd plus the generic registry are to a kube-apiserver.
 *
 * It owns resourceVersions, uids, generation, optimistic concurrency, finalizers, graceful
 * deletion and the event history that watches resume from. The HTTP server (verbs, patch,
 * discovery) and the simulated controllers (kubelet, scheduler, DaemonSet controller, GC) are
 * both clients of this one store, so they see one consistent history.
 *
 * Resources are named as kubectl names them: `pods`, `nodes`, `daemonsets.apps`,
 * `advanceddaemonsets.apps.edgeroll.dev` (`<plural>` for the core group, `<plural>.<group>`
 * otherwise). Versions are not part of the key: one storage per group/resource.
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [field: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface StoreEvent {
  type: WatchEventType;
  resource: string;
  /** The object as stored after the change (for DELETED: its last state, new resourceVersion). */
  object: KubeObject;
  resourceVersion: number;
}

/** A failed store operation, shaped like a Kubernetes `Status` failure. */
export class StoreError extends Error {
  constructor(
    readonly code: number,
    readonly reason: "NotFound" | "AlreadyExists" | "Conflict" | "Gone" | "Invalid" | "BadRequest",
    message: string,
    /** The object's name, for the Status details. */
    readonly objectName?: string,
  ) {
    super(message);
    this.name = "StoreError";
  }
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Pods only: seconds the kubelet is given; 0 removes at once. Default: the pod's own. */
  gracePeriodSeconds?: number;
  propagationPolicy?: "Orphan" | "Background" | "Foreground";
}

export interface ListOptions {
  namespace?: string;
  filter?: (object: KubeObject) => boolean;
}

export interface WatchOptions {
  namespace?: string;
  /** Replay every event after this version; absent means "from now". */
  resourceVersion?: number;
  filter?: (object: KubeObject) => boolean;
}

export type Clock = () => number;

const FOREGROUND = "foregroundDeletion";
const ORPHAN = "orphan";

/** Pod deletion waits for the kubelet only when the pod is bound to a node. */
function needsKubeletConfirmation(resource: string, object: KubeObject): boolean {
  const spec = object.spec as { nodeName?: string } | undefined;
  return resource === "pods" && Boolean(spec?.nodeName);
}

function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** RFC 3339 with whole seconds, as Kubernetes writes timestamps. */
export function isoSeconds(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.\d+Z$/, "Z");
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

function sameKeys(a: object, b: object): boolean {
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  return ak.length === bk.length && ak.every((key, i) => key === bk[i]);
}

/**
 * Freezes `next` deeply, putting in place of each of its subtrees the equal subtree of
 * `previous` (frozen already) where there is one: a heartbeat's new version of a node shares
 * its images, capacity and labels with the last, so the watch history holds what changed,
 * not a whole copy per event. Returns `previous` itself when nothing differs. Freezing makes
 * the contract that stored objects are never changed fail loudly where it is broken.
 */
function freezeSharing(next: unknown, previous: unknown): unknown {
  if (next === null || typeof next !== "object" || Object.isFrozen(next)) return next;
  const node = next as Record<string, unknown>;
  const old = previous !== null && typeof previous === "object" &&
      Array.isArray(previous) === Array.isArray(next)
    ? previous as Record<string, unknown>
    : undefined;
  let same = old !== undefined && sameKeys(node, old);
  for (const key of Object.keys(node)) {
    node[key] = freezeSharing(node[key], old?.[key]);
    if (same && node[key] !== old![key]) same = false;
  }
  return same ? old : Object.freeze(node);
}

export class Store {
  #version = 0;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  /** Per resource, as kube-apiserver's watch cache: Lease churn does not push pod events out. */
  readonly #histories = new Map<string, EventRing>();
  readonly #historyLimit: number;
  /** Set by `compact()`: no watch resumes from before this, whatever its resource. */
  #compactedThrough = 0;
  readonly #listeners = new Set<(event: StoreEvent) => void>();
  readonly #clock: Clock;
  #writes = 0;

  constructor(options: { clock?: Clock; historyLimit?: number } = {}) {
    this.#clock = options.clock ?? Date.now;
    this.#historyLimit = options.historyLimit ?? 10_000;
  }

  get resourceVersion(): number {
    return this.#version;
  }

  /** Oldest resourceVersion a watch of `resource` can still resume after. */
  oldestResumableVersion(resource: string): number {
    return Math.max(this.#histories.get(resource)?.oldestResumable ?? 0, this.#compactedThrough);
  }

  get writes(): number {
    return this.#writes;
  }

  now(): number {
    return this.#clock();
  }

  count(resource?: string): number {
    if (resource) return this.#objects.get(resource)?.size ?? 0;
    let total = 0;
    for (const bucket of this.#objects.values()) total += bucket.size;
    return total;
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObject {
    const found = this.#objects.get(resource)?.get(objectKey(namespace, name));
    if (!found) throw new StoreError(404, "NotFound", `${resource} "${name}" not found`, name);
    return clone(found);
  }

  /** The stored object itself, without a copy (read-only, as for `scan`). */
  peek(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(resource)?.get(objectKey(namespace, name));
  }

  tryGet(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.#objects.get(resource)?.get(objectKey(namespace, name));
    return found ? clone(found) : undefined;
  }

  list(
    resource: string,
    options: ListOptions = {},
  ): { items: KubeObject[]; resourceVersion: number } {
    return { items: this.scan(resource, options).map(clone), resourceVersion: this.#version };
  }

  /**
   * The stored objects themselves, sorted by namespace/name (etcd's key order), without the
   * copy `list` makes: for read-only callers on hot paths (the HTTP server's lists). Stored
   * objects are never mutated after a commit, so a scan stays valid; never change one.
   */
  scan(resource: string, options: ListOptions = {}): readonly KubeObject[] {
    const entries: [string, KubeObject][] = [];
    for (const entry of this.#objects.get(resource) ?? []) {
      if (options.namespace && entry[1].metadata.namespace !== options.namespace) continue;
      if (options.filter && !options.filter(entry[1])) continue;
      entries.push(entry);
    }
    entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return entries.map((entry) => entry[1]);
  }

  /** Store keys that hold (or held) objects. */
  resources(): string[] {
    return [...this.#objects.keys()];
  }

  /** `uid`: one the writer chose before admission (the API's writes), else a new one. */
  create(resource: string, input: KubeObject, uid: string = crypto.randomUUID()): KubeObject {
    const object = clone(input);
    const meta = object.metadata ?? ({} as ObjectMeta);
    object.metadata = meta;
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomSuffix();
    if (!meta.name) throw new StoreError(422, "Invalid", "metadata.name: Required value");
    const bucket = this.#bucket(resource);
    const key = objectKey(meta.namespace, meta.name);
    if (bucket.has(key)) {
      throw new StoreError(
        409,
        "AlreadyExists",
        `${resource} "${meta.name}" already exists`,
        meta.name,
      );
    }
    meta.uid = uid;
    meta.creationTimestamp = isoSeconds(this.#clock());
    meta.generation = 1;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    return this.#commit("ADDED", resource, key, object);
  }

  /**
   * Replaces an object. A `metadata.resourceVersion` in the input is a precondition (409 on
   * mismatch); without one the write is unconditional, as for kube-apiserver updates.
   * Immutable metadata (uid, creationTimestamp, deletionTimestamp) is kept from storage;
   * generation moves when `spec` changes. Removing the last finalizer of an object being
   * deleted completes its deletion.
   */
  update(resource: string, input: KubeObject): KubeObject {
    const bucket = this.#bucket(resource);
    const key = objectKey(input.metadata.namespace, input.metadata.name);
    const stored = bucket.get(key);
    if (!stored) {
      throw new StoreError(
        404,
        "NotFound",
        `${resource} "${input.metadata.name}" not found`,
        input.metadata.name,
      );
    }
    const expected = input.metadata.resourceVersion;
    if (expected && expected !== stored.metadata.resourceVersion) {
      throw new StoreError(
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${resource} "${input.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
        input.metadata.name,
      );
    }
    const object = clone(input);
    const meta = object.metadata;
    meta.uid = stored.metadata.uid;
    meta.creationTimestamp = stored.metadata.creationTimestamp;
    meta.generation = stored.metadata.generation;
    if (stored.metadata.deletionTimestamp) {
      meta.deletionTimestamp = stored.metadata.deletionTimestamp;
      meta.deletionGracePeriodSeconds = stored.metadata.deletionGracePeriodSeconds;
    } else {
      delete meta.deletionTimestamp;
      delete meta.deletionGracePeriodSeconds;
    }
    if (JSON.stringify(object.spec) !== JSON.stringify(stored.spec)) {
      meta.generation = (stored.metadata.generation ?? 0) + 1;
    }
    meta.resourceVersion = stored.metadata.resourceVersion;
    if (JSON.stringify(object) === JSON.stringify(stored)) {
      return clone(stored); // a no-op write does not move resourceVersion, as in kube-apiserver
    }
    if (
      meta.deletionTimestamp && !meta.finalizers?.length && !this.#awaitingKubelet(resource, object)
    ) {
      return this.#remove(resource, key, object);
    }
    return this.#commit("MODIFIED", resource, key, object);
  }

  /**
   * Deletes an object as kube-apiserver does: objects with finalizers, and pods bound to a
   * node (until their kubelet confirms with grace 0), only get a deletionTimestamp.
   * Returns the object's state after the call and whether it is gone.
   */
  delete(
    resource: string,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): { object: KubeObject; removed: boolean } {
    const bucket = this.#bucket(resource);
    const key = objectKey(namespace, name);
    const stored = bucket.get(key);
    if (!stored) throw new StoreError(404, "NotFound", `${resource} "${name}" not found`, name);
    const pre = options.preconditions ?? {};
    if (pre.uid && pre.uid !== stored.metadata.uid) {
      throw new StoreError(
        409,
        "Conflict",
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${stored.metadata.uid}`,
      );
    }
    if (pre.resourceVersion && pre.resourceVersion !== stored.metadata.resourceVersion) {
      throw new StoreError(
        409,
        "Conflict",
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in meta: ${stored.metadata.resourceVersion}`,
      );
    }
    const object = clone(stored);
    const meta = object.metadata;
    const finalizers = new Set(meta.finalizers ?? []);
    if (options.propagationPolicy === "Foreground") finalizers.add(FOREGROUND);
    if (options.propagationPolicy === "Orphan") finalizers.add(ORPHAN);
    const graceful = needsKubeletConfirmation(resource, object) && options.gracePeriodSeconds !== 0;
    if (finalizers.size === 0 && !graceful) {
      return { object: this.#remove(resource, key, object), removed: true };
    }
    if (meta.deletionTimestamp) {
      // Already terminating: a grace-0 delete is the kubelet's confirmation (or a force).
      if (!graceful) meta.deletionGracePeriodSeconds = 0;
    } else {
      const grace = options.gracePeriodSeconds ??
        (object.spec as { terminationGracePeriodSeconds?: number } | undefined)
          ?.terminationGracePeriodSeconds ??
        30;
      meta.deletionGracePeriodSeconds = graceful ? grace : 0;
      meta.deletionTimestamp = isoSeconds(this.#clock() + (graceful ? grace * 1000 : 0));
    }
    if (finalizers.size > 0) meta.finalizers = [...finalizers];
    return { object: this.#commit("MODIFIED", resource, key, object), removed: false };
  }

  /** Subscribes to every change of every resource (for the simulated controllers). */
  subscribe(listener: (event: StoreEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Watches one resource. With `resourceVersion`, first replays what happened after it;
   * a version older than the retained history throws 410 Gone.
   */
  watch(resource: string, options: WatchOptions, onEvent: (event: StoreEvent) => void): () => void {
    const wanted = (event: StoreEvent) =>
      event.resource === resource &&
      (!options.namespace || event.object.metadata.namespace === options.namespace) &&
      (!options.filter || options.filter(event.object));
    if (options.resourceVersion !== undefined && options.resourceVersion < this.#version) {
      const oldest = this.oldestResumableVersion(resource);
      if (options.resourceVersion < oldest) {
        throw new StoreError(
          410,
          "Gone",
          `too old resource version: ${options.resourceVersion} (${oldest})`,
        );
      }
      for (const event of this.#histories.get(resource)?.events() ?? []) {
        if (event.resourceVersion > options.resourceVersion && wanted(event)) onEvent(event);
      }
    }
    return this.subscribe((event) => {
      if (wanted(event)) onEvent(event);
    });
  }

  /** Drops history so that watches from before `version` get 410 Gone (fault injection). */
  compact(version = this.#version): void {
    this.#compactedThrough = Math.max(this.#compactedThrough, Math.min(version, this.#version));
    for (const ring of this.#histories.values()) ring.dropThrough(version);
  }

  #awaitingKubelet(resource: string, object: KubeObject): boolean {
    return needsKubeletConfirmation(resource, object) &&
      object.metadata.deletionGracePeriodSeconds !== 0;
  }

  #bucket(resource: string): Map<string, KubeObject> {
    let bucket = this.#objects.get(resource);
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(resource, bucket);
    }
    return bucket;
  }

  #remove(resource: string, key: string, object: KubeObject): KubeObject {
    const bucket = this.#bucket(resource);
    const stored = this.#record("DELETED", resource, object, bucket.get(key));
    bucket.delete(key);
    return clone(stored);
  }

  #commit(type: WatchEventType, resource: string, key: string, object: KubeObject): KubeObject {
    const bucket = this.#bucket(resource);
    const stored = this.#record(type, resource, object, bucket.get(key));
    bucket.set(key, stored);
    return clone(stored);
  }

  /**
   * Stamps the next version on `object` and records it; the stored object, the event and the
   * history share one frozen copy (as kube-apiserver's watch cache shares its objects).
   */
  #record(
    type: WatchEventType,
    resource: string,
    object: KubeObject,
    previous: KubeObject | undefined,
  ): KubeObject {
    this.#version += 1;
    this.#writes += 1;
    object.metadata.resourceVersion = String(this.#version);
    const stored = freezeSharing(object, previous) as KubeObject;
    const event: StoreEvent = { type, resource, object: stored, resourceVersion: this.#version };
    let ring = this.#histories.get(resource);
    if (!ring) {
      ring = new EventRing(this.#historyLimit);
      this.#histories.set(resource, ring);
    }
    ring.push(event);
    for (const listener of [...this.#listeners]) listener(event);
    return stored;
  }
}

/**
 * The last `capacity` events of one resource, oldest first, in a fixed array: recording an
 * event is O(1) however full the history is.
 */
class EventRing {
  readonly #slots: (StoreEvent | undefined)[];
  #start = 0;
  #length = 0;
  /** Watches may resume after this version; it moves as old events fall out. */
  oldestResumable = 0;

  constructor(readonly capacity: number) {
    this.#slots = new Array(capacity);
  }

  push(event: StoreEvent): void {
    if (this.#length === this.capacity) {
      this.oldestResumable = this.#slots[this.#start]!.resourceVersion;
      this.#slots[this.#start] = event;
      this.#start = (this.#start + 1) % this.capacity;
    } else {
      this.#slots[(this.#start + this.#length) % this.capacity] = event;
      this.#length++;
    }
  }

  *events(): Generator<StoreEvent> {
    for (let i = 0; i < this.#length; i++) yield this.#slots[(this.#start + i) % this.capacity]!;
  }

  /** Forgets every event up to `version`. */
  dropThrough(version: number): void {
    while (this.#length > 0 && this.#slots[this.#start]!.resourceVersion <= version) {
      this.oldestResumable = this.#slots[this.#start]!.resourceVersion;
      this.#slots[this.#start] = undefined;
      this.#start = (this.#start + 1) % this.capacity;
      this.#length--;
    }
  }
}

const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** Five characters as kube-apiserver appends to `generateName`. */
function randomSuffix(): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) {
    suffix += SUFFIX_ALPHABET[Math.floor(Math.random() * SUFFIX_ALPHABET.length)];
  }
  return suffix;
}
