/**
 * DaemonSet history as the upstream controller keeps it: one ControllerRevision per distinct
 * pod template, named `<set>-<hash>`, holding the template as a strategic-merge patch
 * (`$patch: replace`) so that `kubectl rollout history` and `rollout undo` work, numbered in
 * order of use, and pruned to `revisionHistoryLimit` among those no pod still runs.
 */
import { canonical } from "../canonical.ts";
import type { OwnerReference } from "../store.ts";
import { type ClusterCache, DAEMONSETS, REVISIONS } from "./cache.ts";
import { type ClusterContext, SAFE_ALPHABET } from "./context.ts";
import {
  type ControllerRevision,
  controllerUid,
  type DaemonSet,
  type DaemonSetStatus,
} from "./types.ts";

export const HASH_LABEL = "controller-revision-hash";

/** The revision hash: FNV-1a 32 of the template, its decimal digits in a vowel-free alphabet. */
export function templateHash(template: unknown, collisionCount = 0): string {
  const text = canonical(template) + (collisionCount ? String(collisionCount) : "");
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return [...String(hash)].map((digit) => SAFE_ALPHABET[digit.charCodeAt(0) % SAFE_ALPHABET.length])
    .join("");
}

function revisionsOf(cache: ClusterCache, ds: DaemonSet): ControllerRevision[] {
  return [...cache.revisionsByController.get(ds.metadata.uid!) ?? []]
    .map((key) => cache.revisions.get(key) as ControllerRevision);
}

/**
 * A ControllerRevision's `data` as upstream's DaemonSet controller writes it (`getPatch`): the
 * template as Go marshals the typed object, with `"$patch": "replace"`, keys sorted. Clients
 * compare these bytes (`daemon.Match` in the e2e specs), so the Go zero values a typed round trip
 * adds are added here too: the template's `metadata.creationTimestamp: null` and every
 * container's `resources: {}`.
 */
export function revisionData(ds: DaemonSet): unknown {
  const template = structuredClone(ds.spec.template) as Record<string, unknown> & {
    metadata?: Record<string, unknown>;
    spec?: Record<string, unknown>;
  };
  template.metadata = { creationTimestamp: null, ...template.metadata };
  for (const list of ["initContainers", "containers", "ephemeralContainers"]) {
    for (const container of (template.spec?.[list] ?? []) as Record<string, unknown>[]) {
      container.resources ??= {};
    }
  }
  return JSON.parse(canonical({ spec: { template: { ...template, $patch: "replace" } } }));
}

/**
 * The revision of the current template, created or renumbered as needed; undefined when its
 * name was taken by another template (the collision is counted in the set's status, whose
 * update brings the set back for another try).
 */
export function currentRevision(
  { store, cache }: ClusterContext,
  ds: DaemonSet,
): ControllerRevision | undefined {
  const data = revisionData(ds);
  const wanted = canonical(data);
  const revisions = revisionsOf(cache, ds);
  const matching = revisions.filter((r) => canonical(r.data) === wanted);
  const others = revisions.filter((r) => canonical(r.data) !== wanted);
  const nextRevision = Math.max(0, ...others.map((r) => r.revision)) + 1;
  if (matching.length === 0) {
    const collisionCount = ds.status?.collisionCount ?? 0;
    const hash = templateHash(ds.spec.template, collisionCount);
    const name = `${ds.metadata.name}-${hash}`;
    const clash = cache.revisions.get(`${ds.metadata.namespace}/${name}`) as
      | ControllerRevision
      | undefined;
    if (clash) {
      if (canonical(clash.data) === wanted && controllerUid(clash) === ds.metadata.uid) {
        return clash;
      }
      const bumped = structuredClone(ds);
      bumped.status = { ...emptyStatus(), ...bumped.status, collisionCount: collisionCount + 1 };
      store.update(DAEMONSETS, bumped);
      return undefined;
    }
    return store.create(REVISIONS, {
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: {
        name,
        namespace: ds.metadata.namespace,
        labels: { ...ds.spec.template.metadata?.labels, [HASH_LABEL]: hash },
        ...(ds.metadata.annotations ? { annotations: ds.metadata.annotations } : {}),
        ownerReferences: [controllerRef(ds)],
      },
      data,
      revision: nextRevision,
    }) as ControllerRevision;
  }
  matching.sort((a, b) => b.revision - a.revision);
  const [keep, ...duplicates] = matching;
  for (const duplicate of duplicates) {
    store.delete(REVISIONS, duplicate.metadata.namespace, duplicate.metadata.name);
  }
  if (keep.revision < nextRevision) {
    return store.update(REVISIONS, {
      ...structuredClone(keep),
      revision: nextRevision,
    }) as ControllerRevision;
  }
  return keep;
}

/** Deletes the oldest revisions beyond revisionHistoryLimit that no pod still runs. */
export function cleanupHistory({ store, cache }: ClusterContext, ds: DaemonSet): void {
  const limit = ds.spec.revisionHistoryLimit ?? 10;
  const currentHash = templateHashOfCurrent(cache, ds);
  const old = revisionsOf(cache, ds).filter((r) => r.metadata.labels?.[HASH_LABEL] !== currentHash);
  let excess = old.length - limit;
  if (excess <= 0) return;
  const live = new Set(
    cache.podsControlledBy(ds.metadata.uid!).map((p) => p.metadata.labels?.[HASH_LABEL]),
  );
  for (const revision of old.sort((a, b) => a.revision - b.revision)) {
    if (excess <= 0) break;
    if (live.has(revision.metadata.labels?.[HASH_LABEL])) continue;
    store.delete(REVISIONS, revision.metadata.namespace, revision.metadata.name);
    excess--;
  }
}

function templateHashOfCurrent(cache: ClusterCache, ds: DaemonSet): string | undefined {
  const wanted = canonical(revisionData(ds));
  return revisionsOf(cache, ds).find((r) => canonical(r.data) === wanted)?.metadata.labels
    ?.[HASH_LABEL];
}

function emptyStatus(): DaemonSetStatus {
  return {
    currentNumberScheduled: 0,
    numberMisscheduled: 0,
    desiredNumberScheduled: 0,
    numberReady: 0,
  };
}

export function controllerRef(ds: DaemonSet): OwnerReference {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    name: ds.metadata.name,
    uid: ds.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}
