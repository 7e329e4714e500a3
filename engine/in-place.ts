/**
 * InPlaceIfPossible: when the old and the current template differ only in container images
 * (and pod labels or annotations), the pod is patched instead of recreated, as Kruise does. The
 * kubelet restarts the changed containers; until they run the new images the pod counts as
 * unavailable (`runsItsSpec`), so the budget holds during the restart.
 */
import type { ControllerRevision, Pod, PodTemplateSpec } from "../api/kube-objects.ts";
import { Keys } from "../api/kube-objects.ts";
import { canonicalJson } from "../api/hash.ts";
import type { PatchPod } from "../api/plan.ts";

/** The template a revision stands for (`data.spec.template`, as upstream stores it). */
export function revisionTemplate(revision: ControllerRevision): PodTemplateSpec | undefined {
  const data = revision.data as { spec?: { template?: PodTemplateSpec } } | undefined;
  return data?.spec?.template;
}

/** The pod spec with container images blanked: equal shapes differ at most in images. */
function shapeWithoutImages(template: PodTemplateSpec): string {
  const spec = template.spec;
  return canonicalJson({
    ...spec,
    containers: spec.containers.map((c) => ({ ...c, image: null })),
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

/**
 * The merge patch that moves `pod` from `old` to `current` in place, or undefined when anything
 * but images and pod metadata changed (then the pod is recreated).
 */
export function inPlacePatch(
  pod: Pod,
  old: PodTemplateSpec,
  current: PodTemplateSpec,
  hash: string,
  generation: number,
): PatchPod["patch"] | undefined {
  if (shapeWithoutImages(old) !== shapeWithoutImages(current)) return undefined;
  const images = new Map(current.spec.containers.map((c) => [c.name, c.image]));
  return {
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
    spec: {
      containers: pod.spec.containers.map((c) => ({ ...c, image: images.get(c.name) ?? c.image })),
    },
  };
}

/** `pod` as it reads once an in-place update to `hash` lands: new images, new revision. */
export function updatedInPlace(pod: Pod, current: PodTemplateSpec, hash: string): Pod {
  const images = new Map(current.spec.containers.map((c) => [c.name, c.image]));
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      labels: { ...pod.metadata.labels, [Keys.revisionHash]: hash },
      annotations: { ...pod.metadata.annotations, [Keys.inPlaceUpdate]: hash },
    },
    spec: {
      ...pod.spec,
      containers: pod.spec.containers.map((c) => ({ ...c, image: images.get(c.name) ?? c.image })),
    },
  };
}
