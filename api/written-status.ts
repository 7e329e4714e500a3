/**
 * Where a set's rollout status is written, in one place for every reader and the writer: an
 * AdvancedDaemonSet's status subresource, a plain DaemonSet's `rolloutStatusAnnotation` (JSON).
 * An annotation that is not JSON (edited by hand) reads as no status written: the set then
 * looks unobserved, so the next reconcile plans afresh and its claim writes a valid one.
 */
import { rolloutStatusAnnotation } from "./advanced-daemonset.ts";
import type { SetKind } from "./set-ref.ts";

interface SetObject {
  metadata: { annotations?: Record<string, string> };
  status?: unknown;
}

/** The status as the set's last claim wrote it, unparsed; undefined when none was. */
export function writtenStatus(kind: SetKind, set: SetObject): unknown {
  if (kind === "advanceddaemonsets") return set.status;
  const raw = set.metadata.annotations?.[rolloutStatusAnnotation];
  if (raw === undefined) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** The annotations that write `status` on a plain DaemonSet (a merge patch's). */
export function statusAnnotations(status: unknown): Record<string, string> {
  return { [rolloutStatusAnnotation]: JSON.stringify(status) };
}
