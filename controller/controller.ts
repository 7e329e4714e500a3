/**
 * The controller, whole: the reconcile step, the queue that folds requests for a set into
 * few runs, the ticker, and the cache changes that feed the queue (controller-runtime's
 * manager, small). Every dependency comes in, so tests build one over a memory API; the
 * HTTP routes (`routes/app.ts`) only call into it.
 */
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../lib/log.ts";
import { WorkQueue } from "./work-queue.ts";
import { failureOf } from "./errors.ts";
import {
  type ChangedObject,
  keysForChange,
  NodeChanges,
  type QueueKey,
  queueTarget,
  setQueueKey,
} from "./queue-keys.ts";
import { Metrics } from "./metrics.ts";
import { kruiseSetKind, setKey } from "../api/set-ref.ts";
import { KeyedLock } from "../lib/keyed-lock.ts";
import { Ota } from "./ota.ts";
import { type ActionReport, createReconciler, type Planner, type Reconcile } from "./reconciler.ts";
import { createTicker, managedSetRefs } from "./tick.ts";
import { EventWindows, eventWriter } from "./event-fold.ts";
import { realTimers, type Timers } from "../lib/timers.ts";
import type { Analyzer } from "./analysis.ts";

export interface ControllerDeps {
  kube: KubeClient;
  plan: Planner;
  logger: Logger;
  clock?: () => number;
  metrics?: Metrics;
  /**
   * Wait before an event's reconcile (ms; default 0). Not needed to fold bursts: events for a
   * set that is being reconciled already fold into one run after it.
   */
  eventDelayMs?: number;
  /** With `eventDelayMs`: run once no event came for the set for this long (ms; default: the whole delay). */
  eventQuietMs?: number;
  /** Reconciles run at once by events and ticks. */
  concurrency?: number;
  /** Seconds between the tick's full resyncs. */
  resyncSeconds?: number;
  /**
   * How long a set's Events of one reason are folded after the first is written (ms; default
   * `defaultEventWindowMs`; 0 writes each step's at once). ADR 0038.
   */
  eventWindowMs?: number;
  /** The clock and timers of the Event windows (tests); the real ones otherwise. */
  timers?: Timers;
  /** Measures the sets' analysis checks (ADR 0055). */
  analyzer?: Analyzer;
}

/**
 * A set's Events of one reason within this long of the first are folded into one: about a wave
 * of a rollout whose pods start in a couple of seconds.
 */
export const defaultEventWindowMs = 3_000;

export function createController(deps: ControllerDeps) {
  const clock = deps.clock ?? Date.now;
  const metrics = deps.metrics ?? new Metrics();
  const logger = deps.logger;
  const windowMs = deps.eventWindowMs ?? defaultEventWindowMs;
  const setEvents = windowMs > 0
    ? new EventWindows({
      windowMs,
      timers: deps.timers ?? realTimers,
      write: eventWriter(deps.kube, logger),
    })
    : undefined;
  const step = createReconciler({
    kube: deps.kube,
    plan: deps.plan,
    clock,
    logger,
    metrics,
    setEvents,
    ...(deps.analyzer ? { analyzer: deps.analyzer } : {}),
  });
  /**
   * The step, whoever calls it (the queue, the tick, a route). One whose pod writes landed asks
   * the queue for another (after the event delay, folded with the events its writes raise):
   * its claim wrote the status before acting (ADR 0015), so
   * what the act changed (a pod created, deleted, patched, its gate opened) is counted only by
   * the next step, which must not wait for an event or the engine's next look (ADR 0043).
   * Asked while the queue runs that set, it is the one run after (folded with the events the
   * writes raise). Runs of one set take turns, whoever calls them: a route's run beside the
   * queue's would each lose the other's claims (a curl loop got 409 after three lost).
   */
  const turns = new KeyedLock();
  const reconcile: Reconcile = async (ref, options) => {
    const answer = options?.dryRun
      ? await step(ref, options)
      : await turns.run(setKey(ref), () => step(ref, options));
    if (!answer.dryRun && answer.actions.some(landedOnPod)) enqueue(setQueueKey(ref));
    return answer;
  };
  const tick = createTicker({
    kube: deps.kube,
    reconcile,
    clock,
    resyncSeconds: deps.resyncSeconds ?? 600,
    concurrency: deps.concurrency,
  });
  const queue: WorkQueue<QueueKey> = new WorkQueue<QueueKey>(async (key) => {
    const target = queueTarget(key);
    if ("set" in target) return (await reconcile(target.set)).requeueAfter;
    const namespace = target.everySetIn;
    for (const ref of await managedSetRefs(deps.kube)) {
      if (namespace === undefined || ref.namespace === namespace) queue.add(setQueueKey(ref));
    }
  }, {
    concurrency: deps.concurrency,
    delayMs: deps.eventDelayMs ?? 0,
    quietMs: deps.eventQuietMs,
    // A missing set or a refused request will not pass with time; an unreachable API may
    // (retryable), and a failing one or a bug is retried with backoff rather than dropped.
    retryable: (err) => {
      const { kind, retryable } = failureOf(err);
      return retryable || kind === "Upstream" || kind === "Internal";
    },
    logger,
  });

  // The caches report what they apply, as the relay's events would. Their node fingerprints
  // are kept apart from the events': a node change the relay reported first (and whose
  // reconcile found the cache behind) must still call a reconcile once the cache has it.
  /**
   * Queues a key, unless it names a set of a kind this controller does not reconcile: with
   * Kruise compatibility off, kruise-manager's sets and pods are none of ours.
   */
  const enqueue = (key: QueueKey) => {
    const target = queueTarget(key);
    if ("set" in target && target.set.kind === kruiseSetKind && !deps.kube.kruise) return;
    queue.add(key);
  };
  const cachedNodes = new NodeChanges();
  deps.kube.cache?.onChange(({ object, deleted }) => {
    for (const key of keysForChange(object as ChangedObject, deleted, cachedNodes)) enqueue(key);
  });

  return {
    kube: deps.kube,
    reconcile,
    tick,
    /** The work queue: keys from `controller/queue-keys.ts`. */
    queue,
    /** Adds to the queue what this controller reconciles. */
    enqueue,
    metrics,
    /** OpenYurt's OTA upgrade for every node. */
    ota: new Ota({ kube: deps.kube, logger }),
    /** Node fingerprints of the changes callers report (events), apart from the caches'. */
    reportedNodes: new NodeChanges(),
    /** Stops queued work; what runs finishes; the Events held are written. */
    close: async () => {
      await queue.close();
      await setEvents?.flush();
    },
  };
}

/** A pod write that changed something: a create that made the pod, a delete, a patch. */
function landedOnPod(action: ActionReport): boolean {
  return action.result === "done" && podActions.has(action.type);
}

const podActions = new Set<ActionReport["type"]>([
  "createPod",
  "deletePod",
  "patchPod",
  "setPodCondition",
]);

export type Controller = ReturnType<typeof createController>;
