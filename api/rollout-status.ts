/**
 * The RolloutStatus custom resource (`apps.edgeroll.dev/v1alpha1`): edgeroll's rollout status of
 * one plain `apps/v1` DaemonSet (OpenYurt mode), in an object of its own with the DaemonSet's
 * namespace and name (ADR 0039). The DaemonSet controller owns the DaemonSet's `.status` and
 * writes it on every pod change; a status kept on the DaemonSet itself made each of our claims
 * and each of its writes lose to the other. Owned by the DaemonSet, it goes with it.
 */
import { apiVersion, group, version } from "./advanced-daemonset.ts";

export const rolloutStatusKind = "RolloutStatus";
export const rolloutStatusPlural = "rolloutstatuses";
export const rolloutStatusResource = { group, version, plural: rolloutStatusPlural };

interface DaemonSetMeta {
  metadata: { namespace?: string; name?: string; uid?: string };
}

interface RolloutStatusMeta {
  metadata: { resourceVersion?: string };
}

/**
 * The RolloutStatus holding `status` for `daemonSet`; with `previous` (the object as last read
 * or written), a replacement of it under its resourceVersion, else a new one.
 */
export function rolloutStatusObject(
  daemonSet: DaemonSetMeta,
  status: unknown,
  previous?: RolloutStatusMeta,
) {
  const { namespace = "", name = "", uid = "" } = daemonSet.metadata;
  return {
    apiVersion,
    kind: rolloutStatusKind,
    metadata: {
      namespace,
      name,
      ...(previous?.metadata.resourceVersion
        ? { resourceVersion: previous.metadata.resourceVersion }
        : {}),
      labels: { "app.kubernetes.io/managed-by": "edgeroll" },
      // Not a controller reference: nothing adopts it; the garbage collector deletes it with
      // the DaemonSet.
      ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name, uid }],
    },
    status,
  };
}

/** Whether a RolloutStatus was written for this DaemonSet (not one of a set since recreated). */
export function belongsTo(
  rolloutStatus: { metadata: { ownerReferences?: { uid?: string }[] } },
  daemonSet: DaemonSetMeta,
): boolean {
  return rolloutStatus.metadata.ownerReferences?.some((o) => o.uid === daemonSet.metadata.uid) ??
    false;
}
