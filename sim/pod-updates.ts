/**
 * What kube-apiserver (1.33) lets a write change on a pod that exists: through the pod itself,
 * its images and little else (`ValidatePodUpdate`); through `pods/resize`, its containers' cpu
 * and memory only, within the rules of `ValidatePodResize` (the QoS class kept, nothing removed,
 * a memory limit lowered only with RestartContainer, a running container whose kubelet reports
 * its resources). The messages are the API server's (checked side by side by the shared e2e
 * scenario "a pod's cpu and memory resized in place …").
 */
import type { StatusCause } from "./status.ts";
import { canonical } from "./canonical.ts";
import {
  changedResources,
  isResizable,
  lowersMemoryLimitWithoutRestart,
  qosClass,
} from "../api/pod-resources.ts";
import type { Container } from "../api/kube-objects.ts";

// deno-lint-ignore no-explicit-any
type Any = Record<string, any>;

const mutableOnUpdate =
  "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/** The pod spec with what an update may change blanked. */
function immutablePart(spec: Any): string {
  const images = (list: Any[] | undefined) => list?.map((c) => ({ ...c, image: null }));
  return canonical({
    ...spec,
    containers: images(spec.containers),
    initContainers: images(spec.initContainers),
    activeDeadlineSeconds: null,
    tolerations: null,
    terminationGracePeriodSeconds: null,
  });
}

/** Causes of an update of the pod itself that changes what it may not. */
export function podUpdateCauses(old: Any, next: Any): StatusCause[] {
  if (immutablePart(old.spec ?? {}) === immutablePart(next.spec ?? {})) return [];
  return [{
    reason: "FieldValueForbidden",
    message: `spec: Forbidden: ${mutableOnUpdate}`,
    field: "spec",
  }];
}

/**
 * The pod a resize makes of `stored`: its containers' `resources` as the request has them (by
 * name), nothing else (`dropNonResizeUpdates`).
 */
export function resizedPod(stored: Any, incoming: Any): Any {
  const next = structuredClone(stored);
  const sent = new Map(
    ((incoming.spec?.containers ?? []) as Any[]).map((c) => [c.name, c]),
  );
  for (const container of next.spec?.containers ?? []) {
    const asked = sent.get(container.name);
    if (asked && "resources" in asked) container.resources = asked.resources ?? {};
  }
  next.metadata.resourceVersion = incoming.metadata?.resourceVersion;
  return next;
}

/** Causes of a resize `pods/resize` must refuse (`ValidatePodResize`, 1.33). */
export function podResizeCauses(old: Any, next: Any): StatusCause[] {
  const causes: StatusCause[] = [];
  const oldContainers = (old.spec?.containers ?? []) as Container[];
  const statuses = (old.status?.containerStatuses ?? []) as Any[];
  const forbidden = (field: string, message: string) =>
    causes.push({
      reason: "FieldValueForbidden",
      message: `${field}: Forbidden: ${message}`,
      field,
    });
  ((next.spec?.containers ?? []) as Container[]).forEach((container, i) => {
    const before = oldContainers.find((c) => c.name === container.name);
    if (!before || changedResources(before.resources, container.resources).length === 0) return;
    const at = `spec.containers[${i}].resources`;
    const running = statuses.find((s) => s.name === container.name);
    if (running?.state?.running && !running.resources) {
      forbidden("spec", "Pod running on node without support for resize");
      return;
    }
    for (const list of ["requests", "limits"] as const) {
      const [was, is] = [before.resources?.[list] ?? {}, container.resources?.[list] ?? {}];
      const names = new Set([...Object.keys(was), ...Object.keys(is)]);
      for (const name of names) {
        if (isResizable(name)) {
          if (was[name] !== undefined && is[name] === undefined) {
            forbidden(`${at}.${list}[${name}]`, `resource ${list} cannot be removed`);
          }
        } else if (canonical(was[name]) !== canonical(is[name])) {
          forbidden(`${at}`, "only cpu and memory resources are mutable");
        }
      }
    }
    if (lowersMemoryLimitWithoutRestart(before, container)) {
      forbidden(
        `${at}.limits[memory]`,
        "memory limits cannot be decreased unless resizePolicy is RestartContainer",
      );
    }
  });
  const [from, to] = [qosClass(oldContainers), qosClass(next.spec?.containers ?? [])];
  if (from !== to) {
    causes.push({
      reason: "FieldValueInvalid",
      message:
        `spec: Invalid value: "${from}": Pod QOS Class may not change as a result of resizing`,
      field: "spec",
    });
  }
  return causes;
}
