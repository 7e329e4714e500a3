/**
 * What a pod's containers ask of their node, read as the API server and the kubelet read it:
 * requests defaulted from limits, the QoS class, and the resources a resize may change. Shared
 * by the engine (which updates may be in place) and sim (which resizes it admits and how its
 * kubelet answers them).
 */
import type { Container, ResourceRequirements } from "./kube-objects.ts";
import { quantityMillis, type ResourceList } from "./quantity.ts";

/** The resources a pod resize may change (Kubernetes 1.33: "only cpu and memory resources are mutable"). */
export const resizableResources = ["cpu", "memory"] as const;
export type ResizableResource = typeof resizableResources[number];

/** Whether a resize may change the resource `name` (cpu or memory). */
export function isResizable(name: string): name is ResizableResource {
  return (resizableResources as readonly string[]).includes(name);
}

export type QosClass = "Guaranteed" | "Burstable" | "BestEffort";

/** Requests as the API server stores them: a limit without a request is also the request. */
export function effectiveRequests(resources: ResourceRequirements | undefined): ResourceList {
  return { ...resources?.limits, ...resources?.requests };
}

/**
 * The pod's QoS class (upstream's `GetPodQOS`, on cpu and memory): BestEffort when no container
 * asks for either, Guaranteed when every container limits both and requests what it limits.
 */
export function qosClass(containers: readonly Pick<Container, "resources">[]): QosClass {
  let any = false;
  let guaranteed = true;
  for (const { resources } of containers) {
    const requests = effectiveRequests(resources);
    for (const name of resizableResources) {
      const request = requests[name];
      const limit = resources?.limits?.[name];
      if (request !== undefined || limit !== undefined) any = true;
      if (
        request === undefined || limit === undefined ||
        quantityMillis(request) !== quantityMillis(limit)
      ) guaranteed = false;
    }
  }
  return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/** The container's resize policy for `resource`: `NotRequired` unless it says otherwise. */
export function resizeRestartPolicy(container: Container, resource: string): string {
  return container.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ??
    "NotRequired";
}

/**
 * Whether a resize from `from` to `to` lowers the memory limit while `to`'s memory resizePolicy is
 * not RestartContainer: Kubernetes 1.33 refuses it ("memory limits cannot be decreased unless
 * resizePolicy is RestartContainer").
 */
export function lowersMemoryLimitWithoutRestart(from: Container, to: Container): boolean {
  const [before, after] = [from.resources?.limits?.memory, to.resources?.limits?.memory];
  return before !== undefined && after !== undefined &&
    (quantityMillis(after) ?? 0) < (quantityMillis(before) ?? 0) &&
    resizeRestartPolicy(to, "memory") !== "RestartContainer";
}

/** The resizable resources whose request or limit differs between two containers' resources. */
export function changedResources(
  from: ResourceRequirements | undefined,
  to: ResourceRequirements | undefined,
): ResizableResource[] {
  const [fromRequests, toRequests] = [effectiveRequests(from), effectiveRequests(to)];
  const differs = (a: ResourceList | undefined, b: ResourceList | undefined, name: string) =>
    (a?.[name] === undefined ? undefined : quantityMillis(a[name])) !==
      (b?.[name] === undefined ? undefined : quantityMillis(b[name]));
  return resizableResources.filter((name) =>
    differs(fromRequests, toRequests, name) || differs(from?.limits, to?.limits, name)
  );
}

/** A container's cpu and memory requests and limits (a type: it fits ResourceRequirements' index). */
export type ResizableRequirements = { requests?: ResourceList; limits?: ResourceList };

/** The cpu and memory of `list`, or undefined when it names neither. */
function resizablePart(list: ResourceList): ResourceList | undefined {
  const part = Object.fromEntries(Object.entries(list).filter(([name]) => isResizable(name)));
  return Object.keys(part).length > 0 ? part : undefined;
}

/**
 * A container's cpu and memory, requests as stored (defaulted from limits): what a resize sends
 * and what a kubelet reports it runs with (`containerStatuses[].resources`).
 */
export function resizableRequirements(
  resources: ResourceRequirements | undefined,
): ResizableRequirements {
  const requests = resizablePart(effectiveRequests(resources));
  const limits = resizablePart(resources?.limits ?? {});
  return { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) };
}

/** A pod's requests summed over its containers, in milli-units by resource (what a kubelet admits). */
export function podRequests(
  containers: readonly Pick<Container, "resources">[],
): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const { resources } of containers) {
    for (const [name, q] of Object.entries(effectiveRequests(resources))) {
      sums[name] = (sums[name] ?? 0) + (quantityMillis(q) ?? 0);
    }
  }
  return sums;
}
