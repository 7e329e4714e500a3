/**
 * Image pulls ahead of an update, planned (ADR 0034): a Job pinned to a node pulls every image of
 * the set's current template there; its pod tells how it went and the result is written on the
 * node's pod as OpenYurt's `PodImageReady` (True `PullImageSuccess`, or False `PullImageFail`
 * with why), so the pod that replaces it starts from images already on the node.
 * - OpenYurt OTA (`planImagePulls`): a pod whose node asked (`imagepull`) gets a Job, owned by
 *   the pod; a Job older than the request it would answer is replaced.
 * - Kruise's pre-download (`planPreDownload`): the nodes next in the update order get Jobs,
 *   owned by the set, `parallelism` at a time, once `minUpdatedReadyPods` new pods are Ready;
 *   skipped when the whole set updates in one wave, never on nodes held back.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import {
  type Job,
  jobFinished,
  podImageReady,
  preDownloadJobName,
  pulledRevision,
  pullForAnnotation,
  pullImageFail,
  pullJobDeadlineSeconds,
  pullJobName,
  pullJobTtlSeconds,
  type PullObjects,
  pullOutcome,
  pullResult,
  pullSetLabel,
  requestedPull,
} from "../api/image-pull.ts";
import type { Container, Pod } from "../api/kube-objects.ts";
import type { OwnerReference } from "../api/kube-objects.ts";
import { setKey, setKindOf } from "../api/set-ref.ts";
import { resolve, type SetConfig, updateBudget } from "./config.ts";
import { isNodeReady, parseTime, podRevision } from "./pod-node-state.ts";
import { type Allowance, PhaseDecisions, type PhaseResult, type PlanFacts } from "./decisions.ts";
import { activePods, type NodeView } from "./node-view.ts";
import { daemonPodTolerations } from "./should-run.ts";
import { controllerRef } from "./revisions.ts";

/** What the pull Jobs of one step read and may write. */
class Pulls {
  readonly jobs: Map<string, Job>;
  readonly recording: Set<string | undefined>;

  constructor(
    readonly out: PhaseDecisions,
    readonly read: PullObjects | undefined,
    pending: readonly Expectation[],
  ) {
    this.jobs = new Map((read?.jobs ?? []).map((job) => [job.metadata.name ?? "", job]));
    // A result written and not yet seen: a cache still showing the pod as before plans nothing.
    this.recording = new Set(
      pending.filter((e) => e.action === "setCondition" && e.condition?.startsWith(podImageReady))
        .map((e) => e.uid),
    );
  }

  create(job: Job, node: string, pod: string | undefined, reason: string): boolean {
    if (!this.out.writeJob({ type: "createJob", reason, node, job })) return false;
    const images = [...new Set(job.spec!.template!.spec!.containers.map((c) => c.image))];
    this.out.event({
      type: "Normal",
      reason: "PullImageStarted",
      message: `Created Job ${job.metadata.name} to pull ${images.join(", ")} on node ${node}`,
      ...(pod ? { pod } : { onSet: true as const }),
    });
    return true;
  }

  delete(job: Job, reason: string): boolean {
    return this.out.writeJob({
      type: "deleteJob",
      reason,
      name: job.metadata.name ?? "",
      uid: job.metadata.uid ?? "",
    });
  }

  /**
   * Writes how `job` went on `pod` (an Event says it too: on the pod, or on the set for a
   * pre-download). A failed pull's Job still running is deleted (it would retry until its
   * deadline); a pulled one ends by itself and goes by its TTL, left for people to read. False
   * when the burst is spent.
   */
  record(
    pod: Pod,
    node: string,
    job: Job,
    outcome: { state: "pulled" } | { state: "failed"; why: string },
    onSet: boolean,
  ): boolean {
    const hash = this.out.hash;
    const name = job.metadata.name ?? "";
    const condition = pullResult(hash, name, outcome);
    if (!this.out.markImageReady(pod, node, condition, `the pull Job ${name} ended`)) {
      return false;
    }
    const pulled = outcome.state === "pulled";
    this.out.event({
      type: pulled ? "Normal" : "Warning",
      reason: condition.reason,
      message: pulled
        ? `Pulled the images of revision ${hash} on node ${node} (Job ${name})`
        : `Could not pull the images of revision ${hash} on node ${node}: ${condition.message}`,
      ...(onSet ? { onSet: true as const } : { pod: pod.metadata.name }),
    });
    return pulled || jobFinished(job) || this.delete(job, "the pull failed: it is not retried");
  }

  /** The Job pulling the current template's images on `node`, owned by `owner`. */
  manifest(name: string, node: string, owner: OwnerReference, deadlineSeconds: number): Job {
    const { template, identity } = this.out.config;
    const spec = template.spec;
    const kind = setKindOf(identity.apiVersion, identity.kind);
    const marks = {
      labels: { [pullSetLabel]: identity.uid },
      annotations: {
        [pullForAnnotation]: kind
          ? setKey({ kind, namespace: identity.namespace, name: identity.name })
          : "",
      },
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
      metadata: { name, namespace: identity.namespace, ...marks, ownerReferences: [owner] },
      spec: {
        activeDeadlineSeconds: deadlineSeconds,
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
}

/**
 * OpenYurt's OTA pull: for every pod that asked for the current revision, its Job, then the
 * result. A request for an older revision waits for a new one, as YurtHub's upgrade refuses it.
 */
export function planImagePulls(
  facts: PlanFacts,
  allowance: Allowance,
  views: readonly NodeView[],
  pending: readonly Expectation[],
  read: PullObjects | undefined,
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  const pulls = new Pulls(out, read, pending);
  for (const view of views) {
    for (const pod of view.live) {
      const hash = requestedPull(pod);
      if (hash !== out.hash || pulls.recording.has(pod.metadata.uid)) continue;
      const name = pullJobName(pod.metadata.name ?? "", hash);
      const job = pulls.jobs.get(name);
      const wanted = `job/${name} pulled`;
      const why = `node ${view.name} asked to pull the images of revision ${hash}`;
      if (job && isOlderThanRequest(job, pod)) {
        if (!jobFinished(job) && !pulls.delete(job, "the pull was asked for again")) {
          return out.done();
        }
        out.wait(wanted, `${why}; its earlier Job is replaced`);
        out.poll(out.now);
        continue;
      }
      if (!job) {
        const { name: podName = "", uid = "" } = pod.metadata;
        const owner = { apiVersion: "v1", kind: "Pod", name: podName, uid };
        const manifest = pulls.manifest(name, view.name, owner, pullJobDeadlineSeconds);
        if (!pulls.create(manifest, view.name, pod.metadata.name, why)) return out.done();
        out.wait(wanted, why);
        out.poll(out.now);
        continue;
      }
      const outcome = pullOutcome(job, read?.pods ?? []);
      if (outcome.state === "pulling") {
        out.wait(wanted, why);
        out.poll(parseTime(job.metadata.creationTimestamp) ?? out.now);
        continue;
      }
      if (!pulls.record(pod, view.name, job, outcome, false)) return out.done();
    }
  }
  return out.done();
}

/** A Job made before the pod's latest request (a new `imagepull` after an earlier result). */
function isOlderThanRequest(job: Job, pod: Pod): boolean {
  const asked = parseTime(
    pod.status?.conditions?.find((c) => c.type === podImageReady)?.lastTransitionTime,
  );
  const made = parseTime(job.metadata.creationTimestamp);
  return asked !== undefined && made !== undefined && made < asked;
}

/** How a pre-download stands, for the set's status and its `ImagesPreDownloaded` condition. */
export interface PreDownload {
  revision: string;
  /** Nodes in the update's scope whose pod is still old: the ones to pull on. */
  nodes: number;
  pulled: number;
  pulling: number;
  failed: number;
  /** The first nodes whose pull failed (at most `failedNodesListed`). */
  failedNodes: string[];
  /** Why nothing is pulled now, if so. */
  waiting?: { reason: "OneWave" | "WaitingForUpdatedPods"; message: string };
}

export const failedNodesListed = 10;

/**
 * Kruise's pre-download, as its documentation has it: the nodes of old pods, in the update's
 * order and scope (neither held by `partition` nor outside `rollingUpdate.selector`), Ready,
 * pull `parallelism` at a time, once `minUpdatedReadyPods` pods of the new revision are
 * available; none when the whole set updates in one wave. A node's result is kept on its old
 * pod (`PodImageReady` for the revision), so a Job gone by its TTL is not made again; a failed
 * pull is reported and does not stop the others. Jobs of nodes updated meanwhile, or of an older
 * revision, are deleted while they run.
 */
export function planPreDownload(
  facts: PlanFacts,
  allowance: Allowance,
  desired: readonly NodeView[],
  order: readonly NodeView[],
  isAvailable: (pod: Pod) => boolean,
  pending: readonly Expectation[],
  read: PullObjects | undefined,
  touched: ReadonlySet<string>,
): PhaseResult & { progress?: PreDownload } {
  const out = new PhaseDecisions(facts, allowance);
  const { config, hash } = facts;
  const asked = config.preDownload;
  if (!asked || (config.mode !== "Recreate" && config.mode !== "Surge")) return out.done();
  const pulls = new Pulls(out, read, pending);
  const ours = [...pulls.jobs.values()].filter((job) =>
    job.metadata.ownerReferences?.some((o) => o.uid === config.identity.uid)
  );
  const progress: PreDownload = {
    revision: hash,
    nodes: 0,
    pulled: 0,
    pulling: 0,
    failed: 0,
    failedNodes: [],
  };
  const wanted = new Set<string>();
  const stale = (job: Job, reason: string) => {
    if (!jobFinished(job) && !wanted.has(job.metadata.name ?? "")) pulls.delete(job, reason);
  };

  const count = desired.length;
  const partition = resolve(config.partition, count, false);
  const { maxUnavailable } = updateBudget(config, count);
  if (partition === 0 && maxUnavailable >= count) {
    progress.waiting = {
      reason: "OneWave",
      message:
        `every pod updates in one wave (maxUnavailable ${maxUnavailable} of ${count}): nothing to pull ahead of`,
    };
    for (const job of ours) stale(job, "the set updates in one wave");
    return { ...out.done(), progress };
  }

  const candidates = survey(pulls, order, touched, progress, wanted);
  for (const job of ours) stale(job, "its node is updated, or its revision is not the set's");

  const minimum = resolve(asked.minUpdatedReadyPods, count, true);
  const updatedReady =
    desired.filter((v) => activePods(v).some((p) => podRevision(p) === hash && isAvailable(p)))
      .length;
  if (updatedReady < minimum) {
    if (candidates.length > 0) {
      progress.waiting = {
        reason: "WaitingForUpdatedPods",
        message:
          `${updatedReady} of ${minimum} pods of the new revision available before the rest of the fleet pulls (image-predownload-min-updated-ready-pods)`,
      };
      out.wait(
        `${minimum} pods of revision ${hash} available`,
        "the rest of the fleet pre-downloads its images then",
      );
    }
    return { ...out.done(), progress };
  }
  startPulls(pulls, candidates, progress, asked);
  return { ...out.done(), progress };
}

/**
 * The nodes of old pods in the update's order, each counted in `progress` (pulled, failed,
 * pulling, its result recorded once its Job ended) and its Job's name added to `wanted`; answers
 * those still to pull, in order. Skipped: a node whose pod this plan replaces or patches
 * (`touched`: its new pod pulls for itself), and a NotReady one (no Job runs there; the update
 * waits anyway).
 */
function survey(
  pulls: Pulls,
  order: readonly NodeView[],
  touched: ReadonlySet<string>,
  progress: PreDownload,
  wanted: Set<string>,
): { view: NodeView; name: string }[] {
  const { out, read } = pulls;
  const { config, hash } = out.facts;
  const candidates: { view: NodeView; name: string }[] = [];
  for (const view of order) {
    const active = activePods(view);
    const old = active.find((p) => podRevision(p) !== hash);
    if (!old || active.some((p) => podRevision(p) === hash) || view.pendingCreate) continue;
    if (touched.has(old.metadata.uid ?? "")) continue;
    if (!isNodeReady(view.node)) continue;
    progress.nodes++;
    const name = preDownloadJobName(config.identity.name, hash, view.name);
    wanted.add(name);
    if (pulledRevision(old) === hash) {
      const image = old.status?.conditions?.find((c) => c.type === podImageReady);
      if (image?.reason === pullImageFail) failed(progress, view.name);
      else progress.pulled++;
      continue;
    }
    const job = pulls.jobs.get(name);
    if (pulls.recording.has(old.metadata.uid)) {
      progress.pulling++;
      continue;
    }
    if (!job) {
      candidates.push({ view, name });
      continue;
    }
    const outcome = pullOutcome(job, read?.pods ?? []);
    if (outcome.state === "pulling") {
      progress.pulling++;
      out.poll(parseTime(job.metadata.creationTimestamp) ?? out.now);
      continue;
    }
    if (outcome.state === "pulled") progress.pulled++;
    else failed(progress, view.name);
    if (!pulls.record(old, view.name, job, outcome, true)) break;
  }
  return candidates;
}

/** Jobs for the candidates, in order, until `parallelism` pull at once or the burst is spent. */
function startPulls(
  pulls: Pulls,
  candidates: { view: NodeView; name: string }[],
  progress: PreDownload,
  asked: NonNullable<SetConfig["preDownload"]>,
): void {
  const { out } = pulls;
  const { config, hash } = out.facts;
  const owner = controllerRef(config.identity);
  for (const { view, name } of candidates) {
    if (progress.pulling >= asked.parallelism) break;
    const manifest = pulls.manifest(name, view.name, owner, asked.timeoutSeconds);
    const why = `pre-download of revision ${hash} on node ${view.name} (${
      progress.pulling + 1
    } of at most ${asked.parallelism} at once)`;
    if (!pulls.create(manifest, view.name, undefined, why)) break;
    progress.pulling++;
    out.wait(`job/${name} pulled`, why);
    out.poll(out.now);
  }
}

function failed(progress: PreDownload, node: string): void {
  progress.failed++;
  if (progress.failedNodes.length < failedNodesListed) progress.failedNodes.push(node);
}
