/**
 * A watch that keeps going. A watch can stall silently (client-node's `Watch` under Deno did,
 * see `clientNodeWatch`), and any watch ends sooner or later, so this one asks the server to
 * end it (`timeoutSeconds`), takes bookmarks, restarts itself when nothing came for `idleMs`,
 * resumes from the last resourceVersion, and starts over when the server answers 410 Gone:
 * with `relist`, from a LIST's resourceVersion (an informer, whose store the list replaces);
 * without, from a fresh watch, whose synthetic ADDED events are the relist (the relay, which
 * only forwards).
 */
import * as k8s from "@kubernetes/client-node";
import type { Logger } from "../lib/log.ts";
import type { KubeObject } from "./wire-objects.ts";
import type { FieldView } from "../api/protobuf.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchOptions {
  /** e.g. `/api/v1/pods`. */
  path: string;
  labelSelector?: string;
  onEvent: (type: WatchEventType, object: KubeObject) => void;
  logger: Logger;
  /** Asked of the server: it ends the watch after this long, and we resume. */
  timeoutSeconds?: number;
  /** Restart when nothing (not even a bookmark) came for this long. */
  idleMs?: number;
  /** Wait before restarting after an error; doubled up to `maxBackoffMs`. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** The fields a protobuf event is decoded for (api/protobuf.ts); by default every one. */
  view?: FieldView | true;
  /** Lists the collection when there is no resourceVersion to resume from; answers the list's. */
  relist?: () => Promise<string>;
  /**
   * `watching` once a watch is open; `interrupted` when one failed, stalled or expired, until
   * the next is open (what was delivered may then be behind).
   */
  onState?: (state: "watching" | "interrupted") => void;
}

/** What `start` returns: how many times each thing happened, and the way to stop. */
export interface RunningWatch {
  readonly stats: { starts: number; relists: number; idleRestarts: number; errors: number };
  readonly resourceVersion: string | undefined;
  stop(): Promise<void>;
}

/**
 * A watch request (client-node's, or kube/api.ts's `kubeWatch`, which reads protobuf and decodes
 * only `view`), injectable so tests can make it stall or fail.
 */
export type WatchFn = (
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  onLine: (type: string, object: unknown) => void,
  done: (err: unknown) => void,
  view?: FieldView | true,
) => Promise<AbortController>;

export interface ClientNodeWatchOptions {
  /**
   * client-node's own limit on silence (its `Watch.requestTimeoutMs`, 30 s by default): a
   * watch that received nothing for this long is aborted. By default it outlasts the server's
   * own end of each watch (`timeoutSeconds` + 60 s), so silence is judged by `startWatch`'s
   * `idleMs` alone.
   */
  silenceMs?: number;
}

/**
 * client-node's `Watch`, with its silence limit pushed past the watch's own end, and its abort
 * of a watch it timed out reported to `done`. client-node aborts a watch that read nothing for
 * 30 s; under Deno that abort never reaches `done` (the body stream ends neither in an error
 * nor a close), so the watch was dead while `startWatch` counted it open: a collection quiet for
 * 30 s lost its next change until the idle timer (60 s in the caches, 90 s in the relay)
 * restarted it. kube-apiserver sends bookmarks about once a minute, so every quiet collection
 * went through it (a node labelled 53 s into such a watch reached the controller's cache 7 s
 * later, and Kruise's "should run and stop complex daemon" failed on cluster/).
 */
export function clientNodeWatch(kc: k8s.KubeConfig, options: ClientNodeWatchOptions = {}): WatchFn {
  return async (path, query, onLine, done) => {
    const watch = new k8s.Watch(kc);
    // A private field of client-node 2.0.1's Watch (pinned); tests/watch-on-sim.test.ts fails
    // if it stops taking effect.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = options.silenceMs ??
      ((Number(query.timeoutSeconds) || 300) + 60) * 1000;
    const controller = await watch.watch(path, query, onLine, done);
    const { signal } = controller;
    // Only client-node's own timeout: an abort of ours (a restart, a stop) or the one that
    // follows its `done` has nothing to report.
    const timedOut = () => {
      if ((signal.reason as Error | undefined)?.name === "TimeoutError") done(signal.reason);
    };
    if (signal.aborted) timedOut();
    else signal.addEventListener("abort", timedOut, { once: true });
    return controller;
  };
}

export function startWatch(watchFn: WatchFn, options: WatchOptions): RunningWatch {
  const { path, logger } = options;
  const idleMs = options.idleMs ?? 90_000;
  const baseBackoff = options.backoffMs ?? 250;
  const maxBackoff = options.maxBackoffMs ?? 10_000;
  const log = logger.with({ watch: path });
  const stats = { starts: 0, relists: 0, idleRestarts: 0, errors: 0 };
  let resourceVersion: string | undefined;
  let stopped = false;
  let generation = 0;
  let abort: AbortController | undefined;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let backoff = baseBackoff;
  let current: Promise<unknown> = Promise.resolve();

  const clearTimers = () => {
    clearTimeout(idleTimer);
    clearTimeout(retryTimer);
  };

  /** Ends the attempt `gen` and schedules the next one after `delay`. */
  const restart = (gen: number, delay: number, interrupted = true) => {
    if (stopped || gen !== generation) return;
    if (interrupted) options.onState?.("interrupted");
    generation++;
    clearTimers();
    abort?.abort();
    retryTimer = setTimeout(run, delay);
  };

  const armIdle = (gen: number) => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      stats.idleRestarts++;
      log.warn("watch idle, restarting", { idleMs, resourceVersion });
      restart(gen, 0);
    }, idleMs);
  };

  function run() {
    if (stopped) return;
    const gen = generation;
    stats.starts++;
    if (resourceVersion !== undefined || !options.relist) {
      if (resourceVersion === undefined) stats.relists++;
      watchFrom(gen);
      return;
    }
    stats.relists++;
    current = options.relist().then((listed) => {
      if (gen !== generation || stopped) return;
      resourceVersion = listed;
      watchFrom(gen);
    }, (err) => {
      stats.errors++;
      log.warn("list failed", { error: String((err as Error)?.message ?? err) });
      restart(gen, nextBackoff());
    });
  }

  function watchFrom(gen: number) {
    armIdle(gen);
    const onLine = (type: string, raw: unknown) => {
      if (gen !== generation) return;
      armIdle(gen);
      const object = raw as KubeObject & { code?: number; reason?: string; message?: string };
      if (type === "ERROR") {
        // A Status in the stream; 410 Gone means our resourceVersion is too old.
        if (object?.code === 410) {
          log.info("watch expired (410 Gone), relisting", { resourceVersion });
          resourceVersion = undefined;
          restart(gen, 0);
        } else {
          stats.errors++;
          log.warn("watch error event", { code: object?.code, message: object?.message });
          restart(gen, nextBackoff());
        }
        return;
      }
      const rv = object?.metadata?.resourceVersion;
      if (rv) resourceVersion = rv;
      backoff = baseBackoff;
      if (type === "BOOKMARK") return;
      if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") {
        options.onEvent(type, object);
      }
    };
    const done = (err: unknown) => {
      if (gen !== generation) return;
      if (err) {
        // client-node's errors carry `statusCode`, a KubeError `status`.
        const { statusCode, status: kubeStatus } = err as { statusCode?: number; status?: number };
        const status = statusCode ?? kubeStatus;
        if (status === 410) resourceVersion = undefined;
        stats.errors++;
        log.warn("watch ended with an error", {
          error: String((err as Error)?.message ?? err),
          status,
        });
        restart(gen, status === 410 ? 0 : nextBackoff());
      } else {
        // The server ended it (timeoutSeconds): resume at once from where we were.
        restart(gen, 0, false);
      }
    };
    current = watchFn(
      path,
      {
        allowWatchBookmarks: true,
        labelSelector: options.labelSelector,
        timeoutSeconds: options.timeoutSeconds ?? 300,
        resourceVersion,
      },
      onLine,
      done,
      options.view,
    ).then((controller) => {
      if (gen === generation && !stopped) {
        abort = controller;
        options.onState?.("watching");
      } else controller.abort();
    }, (err) => done(err));
  }

  const nextBackoff = () => {
    const wait = backoff;
    backoff = Math.min(maxBackoff, backoff * 2);
    return wait;
  };

  run();
  return {
    stats,
    get resourceVersion() {
      return resourceVersion;
    },
    async stop() {
      stopped = true;
      generation++;
      clearTimers();
      abort?.abort();
      await current;
    },
  };
}
