/**
 * InPlaceIfPossible: when the old and the current template differ only in container images,
 * the cpu and memory of containers' resources, and pod labels or annotations, the pod is updated
 * instead of recreated, as Kruise does with InPlaceWorkloadVerticalScaling (ADR 0056). Resources
 * go first, through `pods/resize`; then one patch moves the images and the revision. The kubelet
 * restarts a container whose image changed, or whose resized resource asks for it
 * (`resizePolicy` RestartContainer); until the pod runs its spec, images and resources as the
 * kubelet reports them, it counts as unavailable (`runsItsSpec`), so the budget holds.
 */
import type { Container, ControllerRevision, Pod, PodTemplateSpec } from "../api/kube-objects.ts";
import { Keys } from "../api/kube-objects.ts";
import { canonicalJson } from "../api/hash.ts";
import type { ContainerResize, PatchPod } from "../api/plan.ts";
import {
  changedResources,
  isResizable,
  lowersMemoryLimitWithoutRestart,
  qosClass,
  resizableRequirements,
  resizeRestartPolicy,
} from "../api/pod-resources.ts";
import type { ResourceList } from "../api/quantity.ts";

/** The template a revision stands for (`data.spec.template`, as upstream stores it). */
export function revisionTemplate(revision: ControllerRevision): PodTemplateSpec | undefined {
  const data = revision.data as { spec?: { template?: PodTemplateSpec } } | undefined;
  return data?.spec?.template;
}

/** A resource list with the quantities of cpu and memory blanked (the names stay). */
function blankResizable(list: ResourceList | undefined): Record<string, unknown> | undefined {
  return list &&
    Object.fromEntries(Object.entries(list).map(([k, v]) => [k, isResizable(k) ? null : v]));
}

/**
 * The pod spec with images and cpu and memory quantities blanked: equal shapes differ at most in
 * those. A resource named or dropped, or any other resource changed, changes the shape (Kruise
 * recreates then too).
 */
function shapeOf(template: PodTemplateSpec): string {
  const spec = template.spec;
  return canonicalJson({
    ...spec,
    containers: spec.containers.map((c) => ({
      ...c,
      image: null,
      resources: c.resources && {
        ...c.resources,
        requests: blankResizable(c.resources.requests),
        limits: blankResizable(c.resources.limits),
      },
    })),
  });
}

/** New values for `current`'s keys, null for keys `old` had and `current` drops. */
function mapPatch(
  old: Record<string, string> | undefined,
  current: Record<string, string> | undefined,
): Record<string, string | null> {
  const patch: Record<string, string | null> = { ...current };
  for (const key of Object.keys(old ?? {})) if (!(key in (current ?? {}))) patch[key] = null;
  return patch;
}

/** What a resize of `container` to `wanted`'s cpu and memory sends. */
function resizeOf(container: Container, wanted: Container): ContainerResize {
  return { name: container.name, resources: resizableRequirements(wanted.resources) };
}

/** `container` with `wanted`'s image and, when resized, its cpu and memory. */
function containerAfter(container: Container, wanted: Container | undefined): Container {
  if (!wanted) return container;
  const changed = changedResources(container.resources, wanted.resources).length > 0;
  if (!changed) return { ...container, image: wanted.image ?? container.image };
  const { resources } = resizeOf(container, wanted);
  return {
    ...container,
    image: wanted.image ?? container.image,
    resources: {
      ...container.resources,
      requests: { ...container.resources?.requests, ...resources.requests },
      limits: { ...container.resources?.limits, ...resources.limits },
    },
  };
}

/** The pod's containers as an in-place update to `current` leaves them. */
function containersAfter(pod: Pod, current: PodTemplateSpec): Container[] {
  const wanted = new Map(current.spec.containers.map((c) => [c.name, c]));
  return pod.spec.containers.map((c) => containerAfter(c, wanted.get(c.name)));
}

/** How one pod is updated in place: the resize first (if any), then the patch. */
export interface InPlaceUpdate {
  /** Merge patch of the pod: the revision, the template's labels and annotations, new images. */
  patch: PatchPod["patch"];
  /** The containers whose cpu or memory change, sent to `pods/resize` before the patch. */
  resize?: ContainerResize[];
  /**
   * Whether the kubelet restarts a container: a new image, or a resized resource whose
   * `resizePolicy` is RestartContainer. Only then does the in-place gate close first (Kruise's
   * `defaultCheckPodNeedsBeUnready`); a resize without restart keeps the pod Ready.
   */
  restarts: boolean;
  /** What changes, for the pod's Event: e.g. `image of agent; cpu, memory of agent`. */
  what: string;
}

/**
 * The in-place update that moves `pod` from `old` to `current`, or undefined when the pod must be
 * recreated: anything else changed, the QoS class would change, or the API server would refuse
 * the resize (it serves no `pods/resize`, its kubelet reports no resources for a container to
 * resize, or a memory limit is lowered without RestartContainer: Kubernetes 1.33's rules).
 */
export function inPlaceUpdate(
  pod: Pod,
  old: PodTemplateSpec,
  current: PodTemplateSpec,
  hash: string,
  generation: number,
  resizeServed = true,
): InPlaceUpdate | undefined {
  if (shapeOf(old) !== shapeOf(current)) return undefined;
  if (qosClass(old.spec.containers) !== qosClass(current.spec.containers)) return undefined;
  const wanted = new Map(current.spec.containers.map((c) => [c.name, c]));
  const statuses = pod.status?.containerStatuses ?? [];
  const resize: ContainerResize[] = [];
  const images: string[] = [];
  const resized: string[] = [];
  let restarts = false;
  for (const container of pod.spec.containers) {
    const target = wanted.get(container.name);
    if (!target) return undefined;
    if (target.image !== container.image) {
      restarts = true;
      images.push(container.name);
    }
    const changed = changedResources(container.resources, target.resources);
    if (changed.length === 0) continue;
    const reported = statuses.find((s) => s.name === container.name)?.resources;
    if (!resizeServed || !reported) return undefined;
    if (lowersMemoryLimitWithoutRestart(container, target)) return undefined;
    if (changed.some((r) => resizeRestartPolicy(target, r) === "RestartContainer")) restarts = true;
    resize.push(resizeOf(container, target));
    resized.push(`${changed.join(", ")} of ${container.name}`);
  }
  const patch: PatchPod["patch"] = {
    metadata: {
      labels: {
        ...mapPatch(old.metadata?.labels, current.metadata?.labels),
        [Keys.revisionHash]: hash,
        [Keys.templateGeneration]: String(generation),
      },
      annotations: {
        ...mapPatch(old.metadata?.annotations, current.metadata?.annotations),
        [Keys.inPlaceUpdate]: hash,
      },
    },
    // A merge patch replaces the list whole: it carries the resized resources too, which the
    // resize sent before it has set (the API server refuses a pod update that changes them).
    ...(images.length > 0 ? { spec: { containers: containersAfter(pod, current) } } : {}),
  };
  const what = [
    ...(images.length > 0 ? [`image of ${images.join(", ")}`] : []),
    ...resized,
  ].join("; ");
  return { patch, ...(resize.length > 0 ? { resize } : {}), restarts, what };
}

/** `pod` as it reads once an in-place update to `hash` lands: new images and resources, new revision. */
export function updatedInPlace(pod: Pod, current: PodTemplateSpec, hash: string): Pod {
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: { ...pod.metadata.labels, [Keys.revisionHash]: hash },
      annotations: { ...pod.metadata.annotations, [Keys.inPlaceUpdate]: hash },
    },
    spec: { ...pod.spec, containers: containersAfter(pod, current) },
  };
}
