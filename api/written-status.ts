/**
 * Where a set's rollout status is written, in one place for every reader and the writer: an
 * AdvancedDaemonSet's status subresource, a Kruise DaemonSet's (under Kruise's v1beta1 names), a
 * plain DaemonSet's RolloutStatus (`api/rollout-status.ts`, ADR 0039).
 *
 * Before ADR 0039 a plain DaemonSet's status was JSON in its `rolloutStatusAnnotation`: it is read
 * there while the DaemonSet has no RolloutStatus yet (the first claim writes one and drops the
 * annotation). An annotation that is not JSON (edited by hand) reads as no status written: the set
 * then looks unobserved, so the next reconcile plans afresh and its claim writes a valid one.
 */
import { rolloutStatusAnnotation } from "./advanced-daemonset.ts";
import { kruiseSetKind, type SetKind } from "./set-ref.ts";
import { kruiseStatusOf, statusFromKruise } from "./kruise.ts";
import { belongsTo } from "./rollout-status.ts";

interface SetObject {
  metadata: { annotations?: Record<string, string>; uid?: string };
  status?: unknown;
}

/** The RolloutStatus of a plain DaemonSet, as far as its readers need it. */
export interface RolloutStatusObject {
  metadata: { resourceVersion?: string; ownerReferences?: { uid?: string }[] };
  status?: unknown;
}

/** A set as read; for a plain DaemonSet, with its RolloutStatus when one exists. */
export interface SetRead {
  set: SetObject;
  rolloutStatus?: RolloutStatusObject;
}

/**
 * The status as the set's last claim wrote it, unparsed, under edgeroll's names; undefined when
 * none was. A RolloutStatus left by an earlier DaemonSet of the same name (the garbage collector
 * has not taken it yet) is none.
 */
export function writtenStatus(kind: SetKind, { set, rolloutStatus }: SetRead): unknown {
  if (kind === "advanceddaemonsets") return set.status;
  if (kind === kruiseSetKind) {
    return set.status && statusFromKruise(set.status as Record<string, unknown>);
  }
  if (rolloutStatus) {
    return belongsTo(rolloutStatus, set) ? rolloutStatus.status : undefined;
  }
  return legacyAnnotationStatus(set);
}

/** The status an edgeroll before ADR 0039 wrote in the DaemonSet's annotation, if any. */
function legacyAnnotationStatus(set: SetObject): unknown {
  const raw = set.metadata.annotations?.[rolloutStatusAnnotation];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** Whether a plain DaemonSet still carries the status annotation of an edgeroll before ADR 0039. */
export function hasLegacyStatusAnnotation(set: SetObject): boolean {
  return set.metadata.annotations?.[rolloutStatusAnnotation] !== undefined;
}

/** A status subresource's body for `status` (edgeroll's names) on a custom resource set. */
export function statusAsStored(kind: SetKind, status: Record<string, unknown>): unknown {
  return kind === kruiseSetKind ? kruiseStatusOf(status) : status;
}
