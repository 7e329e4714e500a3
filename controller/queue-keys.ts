/**
 * The queue's keys: a set, or a fan-out that the queue expands by listing sets ("every set",
 * "every set of a namespace"); and which keys a change of an object calls for, whether an event
 * or the controller's own cache reported it.
 */
import { isManagedDaemonSet } from "../api/openyurt.ts";
import { nodeSchedulingView } from "../kube/wire-objects.ts";
import { parseSetKey, setKey, setKindOf, type SetRef } from "../api/set-ref.ts";
import { Fingerprints } from "../kube/fingerprints.ts";
import { pullForAnnotation } from "../api/image-pull.ts";

/**
 * A queue key. The queue folds equal keys, so a key is a string; only the constructors below
 * make one, and `queueTarget` reads it back, so no caller builds or parses its text.
 */
export type QueueKey = string & { readonly queueKey: unique symbol };

/** What a queue key stands for. */
export type QueueTarget =
  | { set: SetRef }
  /** Every managed set, or every one in `namespace`. */
  | { everySetIn: string | undefined };

export const setQueueKey = (ref: SetRef) => setKey(ref) as QueueKey;
export const everySetKey = "*" as QueueKey;
export const namespaceKey = (namespace: string) => `${namespace}/*` as QueueKey;

export function queueTarget(key: QueueKey): QueueTarget {
  if (key === everySetKey) return { everySetIn: undefined };
  if (key.endsWith("/*")) return { everySetIn: key.slice(0, -2) };
  return { set: parseSetKey(key) };
}

/** An object as a change reports it: what the mapping to keys reads. */
export interface ChangedObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; controller?: boolean }[];
  };
  spec?: unknown;
  status?: unknown;
}

/**
 * Whether a node's `nodeSchedulingView` moved since it was last seen. Node heartbeats do not
 * move it: remembering the last fingerprint per node drops them (a lost memory only costs one
 * extra fan-out).
 */
export class NodeChanges {
  /** Names come from callers: at most this many are remembered, the least recently seen go. */
  static readonly maxRemembered = Fingerprints.maxRemembered;
  /** Each node's scheduling view, as a 64-bit hash: a node's labels can be long. */
  readonly #seen = new Fingerprints();

  get size(): number {
    return this.#seen.size;
  }

  changed(node: ChangedObject, deleted: boolean): boolean {
    return this.#seen.moved(node.metadata.name, nodeSchedulingView(node), deleted);
  }
}

/**
 * Which sets a change of this object concerns: a set itself, a pod's owner, every set for a
 * node whose scheduling-relevant fields moved. For events, and for the controller's caches.
 */
export function keysForChange(
  object: ChangedObject,
  deleted: boolean,
  nodes: NodeChanges,
): QueueKey[] {
  if (object.kind === "Node") return nodes.changed(object, deleted) ? [everySetKey] : [];
  return keysForObject(object);
}

function keysForObject({ apiVersion, kind, metadata }: ChangedObject): QueueKey[] {
  const namespace = metadata.namespace ?? "";
  const setKind = setKindOf(apiVersion, kind);
  if (setKind === "daemonsets" && !isManagedDaemonSet({ metadata })) return [];
  if (setKind) return [setQueueKey({ kind: setKind, namespace, name: metadata.name })];
  if (kind === "Pod") {
    // A pod of an image pull Job: its set's reconcile reads how the pull goes (ADR 0034).
    const pullFor = metadata.annotations?.[pullForAnnotation];
    if (pullFor !== undefined) {
      // Written by edgeroll, but on a pod anyone may label: one that names no set calls none.
      try {
        return [setQueueKey(parseSetKey(pullFor))];
      } catch {
        return [];
      }
    }
  }
  // A pod, or a ControllerRevision: the DaemonSet controller writes a plain DaemonSet's revision
  // after the template change, and the step that saw the change may have planned without it (as
  // upstream's DaemonSet controller, whose history informer queues the owner too).
  if (kind === "Pod" || kind === "ControllerRevision") {
    for (const owner of metadata.ownerReferences ?? []) {
      const ownerKind = owner.controller ? setKindOf(owner.apiVersion, owner.kind) : undefined;
      if (ownerKind) return [setQueueKey({ kind: ownerKind, namespace, name: owner.name })];
    }
  }
  return [];
}
