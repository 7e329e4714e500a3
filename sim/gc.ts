/**
 * The garbage collector and namespace cleaner: a small loop on store events, as
 * kube-controller-manager's garbagecollector and namespace controllers are.
 *
 * - an owner gone: dependents with no other live owner are deleted (background), the others
 *   lose the dangling reference;
 * - an owner terminating with the `foregroundDeletion` finalizer: its dependents are deleted
 *   (foreground too), and the finalizer is removed once none is left;
 * - an owner terminating with the `orphan` finalizer: dependents lose the reference, then the
 *   finalizer is removed;
 * - a namespace gone: everything in it is deleted.
 *
 * Work runs on a macrotask after the write that caused it, never inside the writer's call,
 * so clients observe the intermediate states as they would on a real cluster.
 */
import { type KubeObject, type Store, StoreError, type StoreEvent } from "./store.ts";

interface Ref {
  resource: string;
  namespace?: string;
  name: string;
}

const FOREGROUND = "foregroundDeletion";
const ORPHAN = "orphan";

function refKey(ref: Ref): string {
  return `${ref.resource}|${ref.namespace ?? ""}|${ref.name}`;
}

function refOf(event: StoreEvent): Ref {
  const m = event.object.metadata;
  return { resource: event.resource, namespace: m.namespace, name: m.name };
}

export class GarbageCollector {
  /** uid of every live object → where it is. */
  readonly #live = new Map<string, Ref>();
  /** owner uid → dependents (by ref key). */
  readonly #dependents = new Map<string, Map<string, Ref>>();
  /** dependent ref key → its owners' uids (the reverse of `#dependents`). */
  readonly #owners = new Map<string, string[]>();
  readonly #queue: (() => void)[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #unsubscribe: () => void;

  constructor(private readonly store: Store) {
    for (const resource of store.resources()) {
      for (const object of store.scan(resource)) {
        this.#index({ type: "ADDED", resource, object, resourceVersion: 0 });
      }
    }
    this.#unsubscribe = store.subscribe((event) => this.#onEvent(event));
  }

  stop(): void {
    this.#unsubscribe();
    clearTimeout(this.#timer);
    this.#queue.length = 0;
  }

  #index(event: StoreEvent): void {
    const { uid, ownerReferences } = event.object.metadata;
    const ref = refOf(event);
    const key = refKey(ref);
    for (const ownerUid of this.#owners.get(key) ?? []) this.#dependents.get(ownerUid)?.delete(key);
    this.#owners.delete(key);
    if (event.type === "DELETED") {
      if (uid) this.#live.delete(uid);
      return;
    }
    if (uid) this.#live.set(uid, ref);
    if (ownerReferences?.length) this.#owners.set(key, ownerReferences.map((o) => o.uid));
    for (const owner of ownerReferences ?? []) {
      let dependents = this.#dependents.get(owner.uid);
      if (!dependents) this.#dependents.set(owner.uid, dependents = new Map());
      dependents.set(key, ref);
    }
  }

  #onEvent(event: StoreEvent): void {
    const previousOwners = this.#owners.get(refKey(refOf(event))) ?? [];
    this.#index(event);
    const { uid, deletionTimestamp, finalizers, ownerReferences } = event.object.metadata;
    if (event.type === "DELETED") {
      if (uid) this.#later(() => this.#ownerGone(uid));
      if (event.resource === "namespaces") {
        this.#later(() => this.#emptyNamespace(event.object.metadata.name));
      }
      // A dependent leaving may complete its owners' foreground deletion.
      for (const ownerUid of previousOwners) this.#later(() => this.#finishForeground(ownerUid));
      return;
    }
    if (deletionTimestamp && uid && finalizers?.includes(FOREGROUND)) {
      this.#later(() => this.#deleteDependents(uid));
    }
    if (deletionTimestamp && uid && finalizers?.includes(ORPHAN)) {
      this.#later(() => this.#orphanDependents(uid));
    }
    if (event.type === "ADDED" && ownerReferences?.length) {
      this.#later(() => this.#collectIfOrphaned(event.object));
    }
  }

  #later(work: () => void): void {
    this.#queue.push(work);
    this.#timer ??= setTimeout(() => this.#drain(), 0);
  }

  #drain(): void {
    this.#timer = undefined;
    while (this.#queue.length > 0) {
      const work = this.#queue.shift()!;
      try {
        work();
      } catch (err) {
        // Another writer got there first (gone, changed): the next event retries if needed.
        if (!(err instanceof StoreError)) throw err;
      }
    }
  }

  #dependentsOf(uid: string): Ref[] {
    return [...(this.#dependents.get(uid)?.values() ?? [])];
  }

  #ownerGone(uid: string): void {
    for (const ref of this.#dependentsOf(uid)) {
      const object = this.store.tryGet(ref.resource, ref.namespace, ref.name);
      if (!object) continue;
      const owners = object.metadata.ownerReferences ?? [];
      if (owners.some((o) => o.uid !== uid && this.#live.has(o.uid))) {
        object.metadata.ownerReferences = owners.filter((o) => this.#live.has(o.uid));
        this.store.update(ref.resource, object);
      } else {
        this.#deleteQuietly(ref, "Background");
      }
    }
  }

  #collectIfOrphaned(object: KubeObject): void {
    const owners = object.metadata.ownerReferences ?? [];
    if (owners.length > 0 && owners.every((o) => !this.#live.has(o.uid))) {
      const ref = this.#live.get(object.metadata.uid!);
      if (ref) this.#deleteQuietly(ref, "Background");
    }
  }

  #deleteDependents(uid: string): void {
    const dependents = this.#dependentsOf(uid);
    for (const ref of dependents) this.#deleteQuietly(ref, "Foreground");
    if (dependents.length === 0) this.#finishForeground(uid);
  }

  #finishForeground(uid: string): void {
    if (this.#dependentsOf(uid).length > 0) return;
    this.#removeFinalizer(uid, FOREGROUND);
  }

  #orphanDependents(uid: string): void {
    for (const ref of this.#dependentsOf(uid)) {
      const object = this.store.tryGet(ref.resource, ref.namespace, ref.name);
      if (!object) continue;
      object.metadata.ownerReferences = object.metadata.ownerReferences?.filter((o) =>
        o.uid !== uid
      );
      if (object.metadata.ownerReferences?.length === 0) delete object.metadata.ownerReferences;
      this.store.update(ref.resource, object);
    }
    this.#removeFinalizer(uid, ORPHAN);
  }

  #removeFinalizer(uid: string, finalizer: string): void {
    const ref = this.#live.get(uid);
    if (!ref) return;
    const owner = this.store.tryGet(ref.resource, ref.namespace, ref.name);
    if (!owner?.metadata.deletionTimestamp || !owner.metadata.finalizers?.includes(finalizer)) {
      return;
    }
    owner.metadata.finalizers = owner.metadata.finalizers.filter((f) => f !== finalizer);
    this.store.update(ref.resource, owner);
  }

  #emptyNamespace(namespace: string): void {
    for (const resource of this.store.resources()) {
      for (const object of this.store.scan(resource, { namespace })) {
        this.#deleteQuietly({ resource, namespace, name: object.metadata.name }, "Background");
      }
    }
  }

  #deleteQuietly(ref: Ref, propagationPolicy: "Background" | "Foreground"): void {
    const object = this.store.tryGet(ref.resource, ref.namespace, ref.name);
    if (!object || object.metadata.deletionTimestamp) return;
    this.store.delete(ref.resource, ref.namespace, ref.name, {
      propagationPolicy,
      preconditions: { uid: object.metadata.uid },
    });
  }
}
