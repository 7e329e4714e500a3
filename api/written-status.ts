/**
 * Where a set's rollout status is written, in one place for every reader and the writer: an
 * AdvancedDaemonSet's status subresource, a Kruise DaemonSet's (under Kruise's v1beta1 names), a
 * plain DaemonSet's `rolloutStatusAnnotation` (JSON).
 * An annotation that is not JSON (edited by hand) reads as no status written: the set then
 * looks unobserved, so the next reconcile plans afresh and its claim writes a valid one.
 */
import { rolloutStatusAnnotation } from "./advanced-daemonset.ts";
import { kruiseSetKind, type SetKind } from "./set-ref.ts";
import { kruiseStatusOf, statusFromKruise } from "./kruise.ts";

interface SetObject {
  metadata: { annotations?: Record<string, string> };
  status?: unknown;
}

/**
 * The status as the set's last claim wrote it, unparsed, under edgeroll's names; undefined when
 * none was.
 */
export function writtenStatus(kind: SetKind, set: SetObject): unknown {
  if (kind === "advanceddaemonsets") return set.status;
  if (kind === kruiseSetKind) {
    return set.status && statusFromKruise(set.status as Record<string, unknown>);
  }
  const raw = set.metadata.annotations?.[rolloutStatusAnnotation];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** A status subresource's body for `status` (edgeroll's names) on a custom resource set. */
export function statusAsStored(kind: SetKind, status: Record<string, unknown>): unknown {
  return kind === kruiseSetKind ? kruiseStatusOf(status) : status;
}

/** The annotations that write `status` on a plain DaemonSet (a merge patch's). */
export function statusAnnotations(status: unknown): Record<string, string> {
  return { [rolloutStatusAnnotation]: JSON.stringify(status) };
}
