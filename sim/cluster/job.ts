/**
 * The simulated Job controller for batch/v1 Jobs, written from the behaviour of
 * kube-controller-manager's `pkg/controller/job` and `ttlafterfinished`, as far as the Jobs
 * edgeroll writes (image pulls) and kubectl's users need:
 * - pods from the template, named `<job>-<5 chars>`, labelled by admission's selector, owned by
 *   the Job; at most `parallelism` active, until `completions` succeeded;
 * - a failed pod counts against `backoffLimit` (the next one waits the pod back-off, 10 s
 *   doubling up to 6 min); past it the Job fails (`BackoffLimitExceeded`), as it does when it
 *   has been active longer than `activeDeadlineSeconds` (`DeadlineExceeded`); a finished Job's
 *   active pods are deleted;
 * - conditions as 1.33 writes them: `SuccessCriteriaMet` then `Complete`, `FailureTarget` then
 *   `Failed`; status counts active, ready, succeeded, failed, startTime, completionTime;
 * - `ttlSecondsAfterFinished`: the finished Job is deleted that long after it finished (its
 *   pods go with it through the garbage collector).
 * Not simulated: Indexed completion, pod failure and success policies, suspend, the
 * job-tracking finalizer (pods are counted from what is stored).
 */
import { isoSeconds, StoreError } from "../store.ts";
import { JOBS, PODS } from "./cache.ts";
import { type ClusterContext, createWithSuffix } from "./context.ts";
import { type Condition, findCondition, isPodReady, type Job, keyOf, type Pod } from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";

const COMPONENT = "job-controller";
/** Upstream's pod failure back-off: DefaultJobPodFailureBackOff doubling to MaxJobPodFailureBackOff. */
const FAILURE_BACKOFF_SECONDS = 10;
const MAX_FAILURE_BACKOFF_SECONDS = 360;

export interface JobController {
  stop(): void;
}

export function startJobController(ctx: ClusterContext): JobController {
  const { store, cache, timeline } = ctx;
  const queue = createWorkQueue(timeline, sync, (key, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "job sync failed", { job: key, error: String(error) });
    }
  });
  /** Wake-ups already scheduled per Job (deadline, TTL, back-off): one each is enough. */
  const wakeUps = new Map<string, () => void>();

  cache.onChange((event) => {
    if (event.resource === JOBS) {
      queue.add(keyOf(event.object));
      return;
    }
    if (event.resource !== PODS) return;
    const owner = event.object.metadata.ownerReferences?.find((r) => r.controller);
    if (owner?.kind === "Job") {
      queue.add(`${event.object.metadata.namespace}/${owner.name}`);
    }
  });
  for (const key of cache.jobs.keys()) queue.add(key);

  /**
   * Syncs the Job again after `seconds` of wall time: the durations a Job states (deadline,
   * TTL) are the clock's seconds, as every timestamp sim writes, not scaled by the speed.
   */
  function wakeUpIn(key: string, seconds: number): void {
    wakeUps.get(key)?.();
    wakeUps.set(
      key,
      timeline.after(Math.max(seconds, 0) * timeline.speed, () => {
        wakeUps.delete(key);
        queue.add(key);
      }),
    );
  }

  function event(job: Job, type: "Normal" | "Warning", reason: string, message: string): void {
    ctx.recordEvent({ involved: job, type, reason, message, component: COMPONENT });
  }

  function sync(key: string): void {
    const job = cache.jobs.get(key);
    if (!job) {
      wakeUps.get(key)?.();
      wakeUps.delete(key);
      return;
    }
    const now = timeline.now();
    const pods = cache.podsControlledBy(job.metadata.uid!);
    const finished = finishedAt(job);
    if (finished !== undefined) {
      deleteActive(job, pods);
      const ttl = job.spec.ttlSecondsAfterFinished;
      if (ttl === undefined) return;
      const remaining = finished / 1000 + ttl - now / 1000;
      if (remaining > 0) {
        wakeUpIn(key, remaining);
        return;
      }
      store.delete(JOBS, job.metadata.namespace, job.metadata.name, {
        preconditions: { uid: job.metadata.uid },
      });
      return;
    }
    const startTime = job.status?.startTime ? Date.parse(job.status.startTime) : now;
    const succeeded = pods.filter((p) => p.status?.phase === "Succeeded");
    const failed = pods.filter((p) => p.status?.phase === "Failed");
    const active = pods.filter((p) =>
      !p.metadata.deletionTimestamp && p.status?.phase !== "Succeeded" &&
      p.status?.phase !== "Failed"
    );
    const completions = job.spec.completions ?? 1;
    const parallelism = job.spec.parallelism ?? 1;
    const backoffLimit = job.spec.backoffLimit ?? 6;
    const deadline = job.spec.activeDeadlineSeconds;

    let ending: [reason: string, message: string] | undefined;
    if (succeeded.length >= completions) {
      ending = ["Complete", "Reached expected number of succeeded pods"];
    } else if (failed.length > backoffLimit) {
      ending = ["BackoffLimitExceeded", "Job has reached the specified backoff limit"];
    } else if (deadline !== undefined && now - startTime >= deadline * 1000) {
      ending = ["DeadlineExceeded", "Job was active longer than specified deadline"];
    }

    let created = 0;
    if (ending === undefined) {
      const wanted = Math.min(parallelism, completions - succeeded.length) - active.length;
      const backOff = failureBackOff(failed);
      if (wanted > 0 && backOff > 0) {
        wakeUpIn(key, backOff);
      } else {
        for (let i = 0; i < wanted; i++) createPod(job);
        created = Math.max(wanted, 0);
      }
      if (deadline !== undefined) wakeUpIn(key, deadline - (now - startTime) / 1000);
    }

    const stamp = isoSeconds(now);
    const conditions = [...job.status?.conditions ?? []];
    const status: Job["status"] = {
      ...job.status,
      startTime: isoSeconds(startTime),
      active: ending ? 0 : active.length + created,
      ready: ending ? 0 : active.filter(isPodReady).length,
      succeeded: succeeded.length,
      failed: failed.length,
      terminating: pods.filter((p) => p.metadata.deletionTimestamp).length,
    };
    if (ending) {
      const [reason, message] = ending;
      const complete = reason === "Complete";
      const interim = complete ? "SuccessCriteriaMet" : "FailureTarget";
      const final = complete ? "Complete" : "Failed";
      for (const type of [interim, final]) {
        conditions.push(
          jobCondition(type, complete ? "CompletionsReached" : reason, message, stamp),
        );
      }
      if (complete) status.completionTime = stamp;
      event(
        job,
        complete ? "Normal" : "Warning",
        complete ? "Completed" : reason,
        complete ? "Job completed" : message,
      );
    }
    status.conditions = conditions;
    if (JSON.stringify(status) !== JSON.stringify(job.status)) {
      store.update(JOBS, { ...job, status });
    }
  }

  /**
   * Wall seconds to wait before replacing a failed pod, 0 once its back-off has passed; the
   * back-off is the controller's own, so it runs at the simulation's speed.
   */
  function failureBackOff(failed: Pod[]): number {
    if (failed.length === 0) return 0;
    const last = Math.max(...failed.map(finishedAtOf));
    const backOff = Math.min(
      FAILURE_BACKOFF_SECONDS * 2 ** (failed.length - 1),
      MAX_FAILURE_BACKOFF_SECONDS,
    );
    return Math.max(0, last / 1000 + backOff / timeline.speed - timeline.now() / 1000);
  }

  function deleteActive(job: Job, pods: Pod[]): void {
    for (const pod of pods) {
      const phase = pod.status?.phase;
      if (pod.metadata.deletionTimestamp || phase === "Succeeded" || phase === "Failed") continue;
      try {
        store.delete(PODS, pod.metadata.namespace, pod.metadata.name, {
          preconditions: { uid: pod.metadata.uid },
        });
        event(job, "Normal", "SuccessfulDelete", `Deleted pod: ${pod.metadata.name}`);
      } catch (error) {
        if (!(error instanceof StoreError && (error.code === 404 || error.code === 409))) {
          throw error;
        }
      }
    }
  }

  function createPod(job: Job): void {
    const template = structuredClone(job.spec.template);
    const created = createWithSuffix(ctx, PODS, `${job.metadata.name}-`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "",
        namespace: job.metadata.namespace,
        labels: template.metadata?.labels,
        ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        ownerReferences: [{
          apiVersion: "batch/v1",
          kind: "Job",
          name: job.metadata.name,
          uid: job.metadata.uid!,
          controller: true,
          blockOwnerDeletion: true,
        }],
      },
      spec: template.spec,
      status: { phase: "Pending" },
    });
    event(job, "Normal", "SuccessfulCreate", `Created pod: ${created.metadata.name}`);
  }

  return {
    stop() {
      queue.stop();
      for (const cancel of wakeUps.values()) cancel();
      wakeUps.clear();
    },
  };
}

function jobCondition(type: string, reason: string, message: string, now: string): Condition {
  return {
    type,
    status: "True",
    reason,
    message,
    lastProbeTime: now,
    lastTransitionTime: now,
  };
}

/** When the Job finished (its Complete or Failed condition), in ms; undefined while it runs. */
function finishedAt(job: Job): number | undefined {
  for (const type of ["Complete", "Failed"]) {
    const condition = findCondition(job.status?.conditions, type);
    if (condition?.status === "True") return Date.parse(condition.lastTransitionTime as string);
  }
  return undefined;
}

/** When a pod's last container ended (its terminated state), in ms. */
function finishedAtOf(pod: Pod): number {
  const ends = (pod.status?.containerStatuses ?? [])
    .map((s) => s.state.terminated?.finishedAt)
    .filter((at) => at !== undefined)
    .map((at) => Date.parse(at!));
  return ends.length > 0 ? Math.max(...ends) : Date.parse(pod.metadata.creationTimestamp ?? "");
}
