/**
 * ControllerRevisions of an AdvancedDaemonSet, as upstream's `constructHistory`: the current
 * revision is the one whose data equals the template (adopted if orphaned, its number bumped when
 * rolling back to it), else a new one named `<set>-<hash>`; a name taken by different data is a
 * hash collision and bumps `collisionCount`. Old revisions past `revisionHistoryLimit` that no
 * live pod uses are deleted, oldest first.
 *
 * Revision actions carry no expectation: they are idempotent by name (409 is success).
 */
import { Keys } from "../api/kube-objects.ts";
import type { ControllerRevision, OwnerReference, PodTemplateSpec } from "../api/kube-objects.ts";
import { canonicalJson, templateHash } from "../api/hash.ts";
import type { Action } from "../api/plan.ts";

export interface SetIdentity {
  apiVersion: string;
  kind: string;
  name: string;
  namespace: string;
  uid: string;
}

export function controllerRef(set: SetIdentity): OwnerReference {
  return {
    apiVersion: set.apiVersion,
    kind: set.kind,
    name: set.name,
    uid: set.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerUid(object: { metadata: { ownerReferences?: OwnerReference[] } }) {
  return object.metadata.ownerReferences?.find((ref) => ref.controller)?.uid;
}

export interface RevisionPlan {
  hash: string;
  collisionCount: number;
  actions: Action[];
}

function revisionHash(revision: ControllerRevision): string | undefined {
  return revision.metadata.labels?.[Keys.revisionHash];
}

export function planRevisions(
  set: SetIdentity,
  template: PodTemplateSpec,
  revisionHistoryLimit: number,
  revisions: ControllerRevision[],
  liveHashes: Set<string>,
  collisionCountIn: number,
): RevisionPlan {
  const actions: Action[] = [];
  const ours = revisions.filter((r) => {
    const owner = controllerUid(r);
    return owner === set.uid || owner === undefined;
  });
  const data = { spec: { template } };
  const wanted = canonicalJson(data);
  const maxRevision = ours.reduce((max, r) => Math.max(max, r.revision), 0);
  const adopt = (r: ControllerRevision, why: string) => {
    if (controllerUid(r) === undefined) {
      actions.push({
        type: "patchRevision",
        reason: `adopt orphaned revision (${why})`,
        name: r.metadata.name ?? "",
        uid: r.metadata.uid ?? "",
        patch: { metadata: { ownerReferences: [controllerRef(set)] } },
      });
    }
  };

  // Equal data, highest number first: a rollback reuses its revision.
  const equal = ours.filter((r) => canonicalJson(r.data) === wanted)
    .sort((a, b) => b.revision - a.revision);
  let current = equal[0];
  let collisionCount = collisionCountIn;
  let hash = current ? revisionHash(current) ?? templateHash(template, collisionCount) : "";
  if (current) {
    adopt(current, "it holds the current template");
    if (current.revision < maxRevision) {
      actions.push({
        type: "patchRevision",
        reason: `roll back to revision ${current.revision}: it becomes revision ${maxRevision + 1}`,
        name: current.metadata.name ?? "",
        uid: current.metadata.uid ?? "",
        patch: { revision: maxRevision + 1 },
      });
    }
  } else {
    const created = newRevision(set, template, revisions, maxRevision, collisionCount);
    ({ hash, collisionCount } = created);
    current = created.revision;
    actions.push({
      type: "createRevision",
      reason: `the template changed: revision ${maxRevision + 1} (${hash})`,
      revisionObject: current,
    });
  }

  actions.push(...pruneHistory(ours, current, revisionHistoryLimit, liveHashes));
  return { hash, collisionCount, actions };
}

/**
 * The revision of a template no revision holds: named by its hash, the collision count raised
 * past names already taken by other data (upstream's `collisionCount`).
 */
function newRevision(
  set: SetIdentity,
  template: PodTemplateSpec,
  revisions: ControllerRevision[],
  maxRevision: number,
  collisionCountIn: number,
): { revision: ControllerRevision; hash: string; collisionCount: number } {
  const names = new Map(revisions.map((r) => [r.metadata.name, r]));
  let collisionCount = collisionCountIn;
  let hash = templateHash(template, collisionCount);
  while (names.has(`${set.name}-${hash}`)) {
    collisionCount++;
    hash = templateHash(template, collisionCount);
  }
  const revision: ControllerRevision = {
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: `${set.name}-${hash}`,
      namespace: set.namespace,
      labels: { ...(template.metadata?.labels ?? {}), [Keys.revisionHash]: hash },
      ownerReferences: [controllerRef(set)],
    },
    data: { spec: { template } },
    revision: maxRevision + 1,
  };
  return { revision, hash, collisionCount };
}

/** Old revisions past revisionHistoryLimit are deleted, oldest first, unless a pod runs one. */
function pruneHistory(
  ours: ControllerRevision[],
  current: ControllerRevision,
  revisionHistoryLimit: number,
  liveHashes: Set<string>,
): Action[] {
  const actions: Action[] = [];
  const old = ours.filter((r) => r !== current && r.metadata.name !== current.metadata.name)
    .sort((a, b) => a.revision - b.revision);
  let toDelete = old.length - revisionHistoryLimit;
  for (const r of old) {
    if (toDelete <= 0) break;
    const h = revisionHash(r);
    if (h !== undefined && liveHashes.has(h)) continue;
    actions.push({
      type: "deleteRevision",
      reason: `more than revisionHistoryLimit ${revisionHistoryLimit} old revisions`,
      name: r.metadata.name ?? "",
      uid: r.metadata.uid ?? "",
    });
    toDelete--;
  }
  return actions;
}

/**
 * OpenYurt mode: the native DaemonSet controller made the revisions, so the current one is the
 * newest owned by the set. Undefined until the native controller wrote one.
 */
export function newestOwnedRevisionHash(
  setUid: string,
  revisions: ControllerRevision[],
): string | undefined {
  const owned = revisions.filter((r) => controllerUid(r) === setUid)
    .sort((a, b) => b.revision - a.revision);
  return owned.length > 0 ? revisionHash(owned[0]) : undefined;
}
