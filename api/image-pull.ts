/**
 * Image pre-pull, the names and marks that the OTA routes, the reader, the engine and the relay
 * share (ADR 0034): OpenYurt's `PodImageReady` condition and what its values mean, the Jobs that
 * pull (named as yurt-manager names them, labelled with their set) and how a pull is read from
 * a Job and its pod. Plain data and pure functions; no zod, so the edge agent may load it.
 */
import { Keys } from "./well-known-names.ts";
import { fnv1a64 } from "./hash.ts";
import type { ObjectMeta, Pod, PodCondition, PodSpec } from "./kube-objects.ts";

/** OpenYurt's pod condition: False with the revision while its images are pulled, then the result. */
export const podImageReady = "PodImageReady";
export const pullImageSuccess = "PullImageSuccess";
export const pullImageFail = "PullImageFail";

/** On a pull Job and its pod: the uid of the set it pulls for (what the reader lists by). */
export const pullSetLabel = "apps.edgeroll.dev/image-pull-set";
/** On a pull Job and its pod: the set's key, so an event of the pod calls that set's reconcile. */
export const pullForAnnotation = "apps.edgeroll.dev/image-pull-for";

/** Job settings the issue and OpenYurt agree on (seconds). */
export const pullJobDeadlineSeconds = 600;
export const pullJobTtlSeconds = 30;

/** A batch/v1 Job as the engine reads it: only what a pull's outcome needs. */
export interface Job {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    template?: { metadata?: Pick<ObjectMeta, "labels" | "annotations">; spec?: PodSpec };
    [field: string]: unknown;
  };
  status?: {
    succeeded?: number;
    failed?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    [field: string]: unknown;
  };
}

/** The pull Jobs of one set and their pods, as listed by `pullSetLabel`. */
export interface PullObjects {
  jobs: Job[];
  pods: Pod[];
}

const conditionOf = (pod: Pod, type: string): PodCondition | undefined =>
  pod.status?.conditions?.find((c) => c.type === type);

/** `controllerrevision: <hash>`, the message OpenYurt's conditions carry. */
export const revisionMessage = (hash: string) => `controllerrevision: ${hash}`;

/**
 * The revision whose images a pod asked to pull (YurtHub's `imagepull`: `PodImageReady` False
 * with the revision of its `PodNeedUpgrade` mark), while no result is recorded; else undefined.
 */
export function requestedPull(pod: Pod): string | undefined {
  const need = conditionOf(pod, Keys.podNeedUpgrade);
  const image = conditionOf(pod, podImageReady);
  // Marked, or told the revision its node's maintenance window holds (ADR 0054).
  const told = need?.status === "True" || need?.reason === Keys.outsideWindow;
  if (!told || image?.status !== "False") return undefined;
  if (!need.message || image.message !== need.message) return undefined;
  return need.message.slice(revisionMessage("").length);
}

/**
 * Whether the reader must list the set's pull Jobs: the set asks for Kruise's pre-download
 * (`preDownloadAsked`), or a pod of it awaits an OTA pull.
 */
export function pullsToRead(preDownloadAsked: boolean, pods: readonly Pod[]): boolean {
  return preDownloadAsked || pods.some((pod) => requestedPull(pod) !== undefined);
}

/**
 * The result of a pull as `PodImageReady` holds it: True with the revision, or False
 * `PullImageFail` with the revision first, so the revision a failure was for stays known.
 */
export function pullResult(
  hash: string,
  job: string,
  outcome: { state: "pulled" } | { state: "failed"; why: string },
): { status: "True" | "False"; reason: string; message: string } {
  return outcome.state === "pulled"
    ? { status: "True", reason: pullImageSuccess, message: revisionMessage(hash) }
    : {
      status: "False",
      reason: pullImageFail,
      message: `${revisionMessage(hash)}, pull image job ${job} failed: ${outcome.why}`,
    };
}

/** The revision a pod's recorded pull result (pulled or failed) is for, if any. */
export function pulledRevision(pod: Pod): string | undefined {
  const image = conditionOf(pod, podImageReady);
  if (!image?.message?.startsWith(revisionMessage(""))) return undefined;
  if (image.status === "True" && image.reason === pullImageSuccess) {
    return image.message.slice(revisionMessage("").length);
  }
  if (image.status === "False" && image.reason === pullImageFail) {
    return image.message.slice(revisionMessage("").length).split(",")[0];
  }
  return undefined;
}

/**
 * The Job that pulls `hash`'s images for `pod`: `image-pre-pull-<pod>-<hash>`, as yurt-manager
 * names it, or, past the 63 characters a Job name may have (its pods carry it as a label),
 * cut and told apart by a hash of the whole.
 */
export function pullJobName(podName: string, hash: string): string {
  return jobName(`image-pre-pull-${podName}-${hash}`);
}

/** The Job that pre-downloads `hash`'s images on `node` for a set: `<set>-<hash>-<node>`, as Kruise. */
export function preDownloadJobName(setName: string, hash: string, node: string): string {
  return jobName(`${setName}-${hash}-${node}`);
}

function jobName(full: string): string {
  if (full.length <= 63) return full;
  const digest = fnv1a64(full).toString(36).slice(0, 10);
  return `${full.slice(0, 52).replace(/[-.]+$/, "")}-${digest}`;
}

/** Waiting reasons that mean the image could not be pulled (the kubelet's and the runtime's). */
const pullFailures = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
  "RegistryUnavailable",
  "SignatureValidationFailed",
]);

interface ContainerStatusRead {
  name: string;
  imageID?: string;
  state?: {
    waiting?: { reason?: string; message?: string };
    running?: unknown;
    terminated?: unknown;
  };
}

export type PullOutcome =
  | { state: "pulling" }
  | { state: "pulled" }
  | { state: "failed"; why: string };

/**
 * How a pull Job went, read as OpenYurt's preheat controller reads its counters and, before
 * them, from its pods' containers: a container that has an image ID (running, or ended even
 * with an error: its command may not exist in the image) has pulled; one waiting in a pull
 * failure has failed, without waiting for the Job's deadline.
 */
export function pullOutcome(job: Job, pods: readonly Pod[]): PullOutcome {
  const mine = pods.filter((pod) =>
    pod.metadata.ownerReferences?.some((o) => o.controller && o.uid === job.metadata.uid)
  );
  for (const pod of mine) {
    const statuses = (pod.status?.containerStatuses ?? []) as ContainerStatusRead[];
    const failure = statuses.find((s) => pullFailures.has(s.state?.waiting?.reason ?? ""));
    if (failure) {
      const { reason, message } = failure.state!.waiting!;
      return { state: "failed", why: `${failure.name}: ${reason}${message ? `: ${message}` : ""}` };
    }
    const containers = pod.spec.containers?.length ?? 0;
    if (containers > 0 && statuses.length === containers && statuses.every((s) => s.imageID)) {
      return { state: "pulled" };
    }
  }
  if ((job.status?.succeeded ?? 0) > 0) return { state: "pulled" };
  const failed = job.status?.conditions?.find((c) => c.type === "Failed" && c.status === "True");
  if (failed) return { state: "failed", why: `${failed.reason}: ${failed.message ?? ""}` };
  return { state: "pulling" };
}

/** Whether a Job has ended (Complete or Failed): its TTL removes it. */
export function jobFinished(job: Job): boolean {
  return job.status?.conditions?.some((c) =>
    (c.type === "Complete" || c.type === "Failed") && c.status === "True"
  ) ?? false;
}
