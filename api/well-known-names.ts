/**
 * Well-known label, annotation and condition names shared by engine, kube and sim: plain
 * strings, in a module of their own so that code which needs only the names (the edge agent)
 * does not load the zod schemas of `kube-objects.ts`.
 */
export const Keys = {
  /** Revision hash label on pods and ControllerRevisions (upstream `DefaultDaemonSetUniqueLabelKey`). */
  revisionHash: "controller-revision-hash",
  /** The set's generation a pod was created from (upstream `DaemonSetTemplateGenerationKey`). */
  templateGeneration: "pod-template-generation",
  /** Kruise's lifecycle state label (`PreparingDelete` while a preDelete hook holds the pod). */
  lifecycleState: "lifecycle.apps.kruise.io/state",
  /**
   * On a pod edgeroll updated in place (InPlaceIfPossible): the revision it moves to. The pod
   * counts as unavailable until its containers run the images and resources of its spec.
   */
  inPlaceUpdate: "apps.edgeroll.dev/inplace-update-revision",
  /** OpenYurt's OTA pod condition type. */
  podNeedUpgrade: "PodNeedUpgrade",
  /**
   * The reason of an OTA pod's `PodNeedUpgrade` False while its node's maintenance window is
   * closed (ADR 0054): its message names the revision it waits for, which the node may pull
   * (`imagepull`) and queue its upgrade to.
   */
  outsideWindow: "OutsideMaintenanceWindow",
  /**
   * Kruise's in-place readiness gate and condition: on every pod of an InPlaceIfPossible set,
   * False while its images change in place, so the kubelet keeps the pod unready.
   */
  inPlaceUpdateReady: "InPlaceUpdateReady",
  /**
   * The kubelet's pod conditions of a resize (Kubernetes 1.33): Pending with reason Infeasible
   * or Deferred while it has not allocated the new resources, InProgress until they are applied.
   */
  podResizePending: "PodResizePending",
  podResizeInProgress: "PodResizeInProgress",
} as const;
