/**
 * OpenYurt's image pre-pull, planned (ADR 0034): a pod whose node asked to pull the new
 * revision's images (`imagepull`: `PodImageReady` False with that revision) gets a Job pinned
 * to its node that pulls every image of the template; the Job's outcome is written back on the
 * pod (`PodImageReady` True `PullImageSuccess`, or False `PullImageFail` with why), after which
 * `upgrade` starts from images already on the node. A Job older than the request it would answer
 * (a new `imagepull` after a failure) is deleted and made again.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import {
  type Job,
  jobFinished,
  podImageReady,
  pullForAnnotation,
  pullImageFail,
  pullImageSuccess,
  pullJobDeadlineSeconds,
  pullJobName,
  pullJobTtlSeconds,
  type PullObjects,
  pullOutcome,
  pullSetLabel,
  requestedPull,
  revisionMessage,
} from "../api/image-pull.ts";
import type { Container, Pod } from "../api/kube-objects.ts";
import { setKey, setKindOf } from "../api/set-ref.ts";
import { parseTime } from "./objects.ts";
import type { NodeView, PlanBuilder } from "./plan-builder.ts";
import { daemonPodTolerations } from "./placement.ts";

export function planImagePulls(
  builder: PlanBuilder,
  views: NodeView[],
  pending: Expectation[],
  pulls: PullObjects | undefined,
): void {
  const jobs = new Map((pulls?.jobs ?? []).map((job) => [job.metadata.name, job]));
  const recording = new Set(
    pending.filter((e) => e.action === "setCondition" && e.condition?.startsWith(podImageReady))
      .map((e) => e.uid),
  );
  for (const view of views) {
    for (const pod of view.live) {
      const hash = requestedPull(pod);
      // A request for an older revision waits for a new one, as YurtHub's upgrade refuses it.
      if (hash !== builder.hash || recording.has(pod.metadata.uid)) continue;
      const name = pullJobName(pod.metadata.name ?? "", hash);
      const job = jobs.get(name);
      const wanted = `job/${name} pulled`;
      const why = `node ${view.name} asked to pull the images of revision ${hash}`;
      if (job && isOlderThanRequest(job, pod)) {
        if (!jobFinished(job) && !deleteJob(builder, job, "the pull was asked for again")) return;
        builder.wait(wanted, `${why}; its earlier Job is replaced`);
        builder.poll(builder.now);
        continue;
      }
      if (!job) {
        if (!createJob(builder, pod, view.name, name, why)) return;
        builder.wait(wanted, why);
        builder.poll(builder.now);
        continue;
      }
      const outcome = pullOutcome(job, pulls?.pods ?? []);
      if (outcome.state === "pulling") {
        builder.wait(wanted, why);
        builder.poll(parseTime(job.metadata.creationTimestamp) ?? builder.now);
        continue;
      }
      const pulled = outcome.state === "pulled";
      const condition = pulled
        ? { status: "True" as const, reason: pullImageSuccess, message: revisionMessage(hash) }
        : {
          status: "False" as const,
          reason: pullImageFail,
          message: `pull image job ${name} failed: ${outcome.why}`,
        };
      if (!builder.markImageReady(pod, view.name, condition, `the pull Job ${name} ended`)) return;
      builder.event({
        type: pulled ? "Normal" : "Warning",
        reason: condition.reason,
        message: pulled
          ? `Pulled the images of revision ${hash} on node ${view.name} (Job ${name})`
          : `Could not pull the images of revision ${hash} on node ${view.name}: ${condition.message}`,
        pod: pod.metadata.name,
      });
      // A Job still running (a pull that keeps failing, or a command the image lacks) is done
      // with: its result is recorded. One that ended goes after its TTL.
      if (!jobFinished(job) && !deleteJob(builder, job, "its result is recorded on the pod")) {
        return;
      }
    }
  }
}

/** A Job made before the pod's latest request (a new `imagepull` after an earlier result). */
function isOlderThanRequest(job: Job, pod: Pod): boolean {
  const asked = parseTime(
    pod.status?.conditions?.find((c) => c.type === podImageReady)?.lastTransitionTime,
  );
  const made = parseTime(job.metadata.creationTimestamp);
  return asked !== undefined && made !== undefined && made < asked;
}

function deleteJob(builder: PlanBuilder, job: Job, reason: string): boolean {
  return builder.writeJob({
    type: "deleteJob",
    reason,
    name: job.metadata.name ?? "",
    uid: job.metadata.uid ?? "",
  });
}

function createJob(
  builder: PlanBuilder,
  pod: Pod,
  node: string,
  name: string,
  reason: string,
): boolean {
  const job = pullJob(builder, pod, node, name);
  if (!builder.writeJob({ type: "createJob", reason, node, job })) return false;
  const images = [...new Set(job.spec!.template!.spec!.containers.map((c) => c.image))].join(", ");
  builder.event({
    type: "Normal",
    reason: "PullImageStarted",
    message: `Created Job ${name} to pull ${images} on node ${node}`,
    pod: pod.metadata.name,
  });
  return true;
}

/**
 * The Job: on the pod's node, one container per container and init container of the current
 * template, each running its image with `true` and pulling it always; a container whose image
 * has no `true` still counts as pulled (`pullOutcome`). It tolerates what the set's pods do,
 * mounts no token, and is owned by the pod, so an upgrade that deletes the pod takes it along.
 */
function pullJob(builder: PlanBuilder, pod: Pod, node: string, name: string): Job {
  const { template, identity } = builder.config;
  const spec = template.spec;
  const kind = setKindOf(identity.apiVersion, identity.kind);
  const setName = kind ? setKey({ kind, namespace: identity.namespace, name: identity.name }) : "";
  const marks = {
    labels: { [pullSetLabel]: identity.uid },
    annotations: { [pullForAnnotation]: setName },
  };
  const puller = (prefix: string) => (c: Container) => ({
    name: `${prefix}${c.name}`.slice(0, 63),
    image: c.image,
    command: ["true"],
    imagePullPolicy: "Always",
  });
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace: identity.namespace,
      ...marks,
      ownerReferences: [{
        apiVersion: "v1",
        kind: "Pod",
        name: pod.metadata.name ?? "",
        uid: pod.metadata.uid ?? "",
      }],
    },
    spec: {
      activeDeadlineSeconds: pullJobDeadlineSeconds,
      backoffLimit: 1,
      ttlSecondsAfterFinished: pullJobTtlSeconds,
      template: {
        metadata: marks,
        spec: {
          nodeName: node,
          restartPolicy: "Never",
          containers: [
            ...spec.containers.map(puller("prepull-")),
            ...((spec.initContainers ?? []) as Container[]).map(puller("prepull-init-")),
          ],
          tolerations: daemonPodTolerations(spec),
          ...(spec.imagePullSecrets ? { imagePullSecrets: spec.imagePullSecrets } : {}),
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 0,
        },
      },
    },
  };
}
