/**
 * OTA for the agent's own node, as YurtHub serves it: `GET /pods` from the node's pod cache
 * (it answers while the node is cut off, with the data's age), and the upgrade, which reads the
 * pod live, runs YurtHub's pre-checks and deletes it with a UID precondition for its DaemonSet
 * (OnDelete) to recreate. While cut off, an upgrade answers YurtHub's 503, or with
 * `?whenConnected=true` is checked against the cache, journalled and answered 202, then carried
 * out once when the link returns (edge/upgrade-journal.ts).
 */
import type { Pod } from "../api/kube-objects.ts";
import {
  checkUpgradable,
  disconnected,
  heldRevision,
  markedRevision,
  OtaError,
  type OtaService,
  podNotFound,
  pullRequest,
  pullRequestedText,
} from "../controller/ota-checks.ts";
import { isConflict, isNotFound, isUnreachable, KubeError } from "../kube/errors.ts";
import type { LeanKubeApi } from "../kube/lean-client.ts";
import { answeredWithin } from "../kube/deadline.ts";
import type { Logger } from "../lib/log.ts";
import type { NodePodCache } from "./pod-cache.ts";
import type { UpgradeJournal, UpgradeRequest } from "./upgrade-journal.ts";

/** Tries of a queued upgrade the API server refuses for a pod the node's list has (1+2+…+30 s). */
const maxDeferrals = 8;
const maxRetryWaitMs = 30_000;

export interface EdgeOtaDeps {
  api: LeanKubeApi;
  cache: NodePodCache;
  journal: UpgradeJournal;
  node: string;
  logger: Logger;
  /** How long a live call may take before the link counts as down (default 10 s). */
  deadlineMs?: number;
  /** The first wait before a deferred queued upgrade is tried again (default 1 s; doubles to 30 s). */
  retryBaseMs?: number;
  now?: () => number;
}

/**
 * The API server's 404 or 403 for a pod: gone, or (for a pod this node's list has) not admitted
 * yet by a restarted API server's NodeRestriction or Node authorizer.
 */
function refusedByApiServer(err: unknown): err is OtaError {
  return err instanceof OtaError && (err.status === 404 || err.status === 403);
}

export class EdgeOta implements OtaService {
  readonly #d: EdgeOtaDeps & { deadlineMs: number; retryBaseMs: number; now: () => number };
  /** The run carrying out pending requests, if one is going; at most one at a time. */
  #carrying: Promise<void> | undefined;
  #carryAgain = false;
  /** How often each deferred request (by pod UID) was tried; only pending ones, so bounded. */
  readonly #deferrals = new Map<string, number>();
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(deps: EdgeOtaDeps) {
    this.#d = { deadlineMs: 10_000, retryBaseMs: 1_000, now: Date.now, ...deps };
    deps.cache.onConnected(() => void this.carryOutPending());
    // A queued upgrade its node's window held (ADR 0054) goes once the pod is marked again.
    deps.cache.onPodChange((pod) => {
      const waiting = deps.journal.pending().some((r) => r.uid === pod.metadata.uid);
      if (waiting && markedRevision(pod) !== undefined) void this.carryOutPending();
    });
  }

  /** Stops the timer of a deferred retry. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  pods(asked?: string): Promise<{ list: unknown; ageSeconds?: number }> {
    const { cache, journal, node } = this.#d;
    if (asked !== undefined && asked !== node) {
      throw new OtaError(403, `this agent serves node ${node} only, not ${asked}`);
    }
    const known = cache.pods();
    if (!known) {
      throw new OtaError(
        503,
        `Get pod list failed, the pods of node ${node} are not known yet: the API server has not answered since the agent started, and no cache was saved`,
      );
    }
    return Promise.resolve({
      list: {
        kind: "PodList",
        apiVersion: "v1",
        metadata: { resourceVersion: known.resourceVersion },
        items: known.pods,
        // edgeroll's: the upgrades asked for while cut off, and how the latest ended.
        upgradeRequests: journal.list(),
      },
      ageSeconds: known.ageSeconds,
    });
  }

  async upgrade(
    namespace: string,
    name: string,
    { whenConnected }: { whenConnected: boolean },
  ): Promise<{ status: 200 | 202; text: string }> {
    const { cache } = this.#d;
    if (!cache.connected) {
      if (whenConnected) return this.#record(namespace, name);
      throw disconnected();
    }
    try {
      await this.#upgradeNow(namespace, name);
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      cache.linkFailed(err);
      // A delete already sent may still land; the journal's UID check makes a second run safe.
      if (whenConnected) return this.#record(namespace, name);
      throw disconnected();
    }
    return { status: 200, text: `Start updating pod ${namespace}/${name}` };
  }

  /**
   * YurtHub's `imagepull` for this node's pod: its checks on the live pod, then `PodImageReady`
   * False with its revision, written with the node's credentials; the controller's puller runs
   * the Job. Cut off, YurtHub's 503 (a pull needs the registry, which the link reaches).
   */
  async imagePull(namespace: string, name: string): Promise<{ status: 200; text: string }> {
    const { cache, api, deadlineMs, node } = this.#d;
    if (!cache.connected) throw disconnected();
    try {
      const pod = await this.#livePod(namespace, name);
      const condition = pullRequest(pod, new Date(this.#d.now()), node);
      const uid = pod.metadata.uid ?? "";
      await answeredWithin(
        api.setPodCondition({ namespace, name, uid, condition }),
        deadlineMs,
        "patch pod status",
      ).catch((err) => {
        if (isNotFound(err)) throw podNotFound(namespace, name);
        if (isUnreachable(err)) throw err;
        throw new OtaError(500, `Patch pod status for imagepull failed, ${(err as Error).message}`);
      });
      this.#d.logger.info("OTA image pull requested", {
        pod: `${namespace}/${name}`,
        revision: condition.message,
      });
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      cache.linkFailed(err);
      throw disconnected();
    }
    return { status: 200, text: pullRequestedText(namespace, name) };
  }

  /**
   * Carries out every pending request, one at a time, each checked again on the pod as the
   * watch has it. Called when the link returns; a call while a run is going makes it run once
   * more.
   */
  carryOutPending(): Promise<void> {
    if (this.#carrying) {
      this.#carryAgain = true;
      return this.#carrying;
    }
    this.#carrying = (async () => {
      do {
        this.#carryAgain = false;
        for (const request of this.#d.journal.pending()) {
          if (!this.#d.cache.connected) return;
          await this.#carryOut(request);
        }
      } while (this.#carryAgain);
    })().finally(() => this.#carrying = undefined);
    return this.#carrying;
  }

  /** YurtHub's upgrade: the live pod, its pre-checks, the delete with its UID. */
  async #upgradeNow(namespace: string, name: string): Promise<void> {
    const pod = await this.#notYetAdmitted(namespace, name, () => this.#livePod(namespace, name));
    checkUpgradable(pod, this.#d.node);
    await this.#notYetAdmitted(namespace, name, () => this.#delete(pod));
  }

  /**
   * `call`, with a 404 or 403 of the API server for a pod this node's list has (bound here, not
   * going) answered 503, to be asked again: a restarted API server whose NodeRestriction pod
   * lister or Node authorizer graph has not caught up, as a queued upgrade defers it (ADR 0017).
   * A person's request is not held while it catches up; a pod really gone answers 404 next time.
   */
  async #notYetAdmitted<T>(namespace: string, name: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const listed = this.#d.cache.pod(namespace, name);
      if (
        refusedByApiServer(err) && listed && !listed.metadata.deletionTimestamp &&
        listed.spec.nodeName === this.#d.node
      ) {
        throw new OtaError(
          503,
          `Apply update failed, the API server does not admit it yet for pod ${namespace}/${name}, which this node's pod list has (${
            (err as Error).message
          }): try again in a few seconds`,
        );
      }
      throw err;
    }
  }

  async #carryOut(request: UpgradeRequest): Promise<void> {
    const { journal, logger, cache } = this.#d;
    const at = () => new Date(this.#d.now()).toISOString();
    const fields = { pod: `${request.namespace}/${request.name}`, uid: request.uid };
    try {
      // The pod as the list that just brought the link back has it: as fresh as a GET, and
      // unlike a GET not refused while a restarted API server's Node authorizer still builds
      // its graph of which pod is bound where (seen on cluster/: 403 "no relationship found").
      const pod = cache.pod(request.namespace, request.name);
      if (!pod || pod.metadata.uid !== request.uid || pod.metadata.deletionTimestamp) {
        // Gone, replaced or going: by someone else, or by this agent before a restart.
        journal.settle(request, "replaced", at());
        logger.info("queued OTA upgrade: the pod was already replaced", fields);
        return;
      }
      if (markedRevision(pod) === undefined && heldRevision(pod) !== undefined) {
        // Its node's maintenance window closed since it was queued: it waits for the next one,
        // when the pod is marked again (onPodChange).
        logger.info("queued OTA upgrade waits for its maintenance window", fields);
        return;
      }
      checkUpgradable(pod, this.#d.node);
      try {
        await this.#delete(pod);
      } catch (err) {
        // The list that brought the link back has the pod on this node, yet the delete is
        // refused as not found or forbidden: a restarted API server whose NodeRestriction pod
        // lister or Node authorizer graph has not caught up (seen on cluster/: 404 for a pod
        // that stood). Tried again with backoff; given up after maxDeferrals.
        if (refusedByApiServer(err)) {
          const tries = (this.#deferrals.get(request.uid) ?? 0) + 1;
          if (tries <= maxDeferrals) {
            this.#deferrals.set(request.uid, tries);
            this.#retryLater();
            logger.info("queued OTA upgrade deferred: the API server does not admit it yet", {
              ...fields,
              error: err.message,
              tries,
            });
            return;
          }
        }
        throw err;
      }
      this.#deferrals.delete(request.uid);
      journal.settle(request, "started", at());
      logger.info("queued OTA upgrade started", { ...fields, revision: markedRevision(pod) });
    } catch (err) {
      if (isUnreachable(err)) {
        cache.linkFailed(err);
        return; // Still pending: the next reconnection tries again.
      }
      this.#deferrals.delete(request.uid);
      const detail = err instanceof Error ? err.message : String(err);
      if (err instanceof OtaError && err.status === 404) journal.settle(request, "replaced", at());
      else journal.settle(request, "refused", at(), detail);
      logger.warn("queued OTA upgrade refused", { ...fields, error: detail });
    }
  }

  /** One timer for every deferred request, its wait doubling with the most-tried one's tries. */
  #retryLater(): void {
    if (this.#retryTimer !== undefined || this.#closed) return;
    const tries = Math.max(...this.#deferrals.values());
    const waitMs = Math.min(this.#d.retryBaseMs * 2 ** (tries - 1), maxRetryWaitMs);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      void this.carryOutPending();
    }, waitMs);
  }

  /** Checked against the cached pod, journalled, then answered: the 202 is a promise kept. */
  #record(namespace: string, name: string): { status: 202; text: string } {
    if (!this.#d.cache.pods()) throw disconnected();
    const pod = this.#d.cache.pod(namespace, name);
    if (!pod) throw podNotFound(namespace, name);
    checkUpgradable(pod, this.#d.node);
    this.#d.journal.add({
      namespace,
      name,
      uid: pod.metadata.uid ?? "",
      revision: markedRevision(pod) ?? "",
      requestedAt: new Date(this.#d.now()).toISOString(),
    });
    this.#d.logger.info("OTA upgrade queued until the node reconnects", {
      pod: `${namespace}/${name}`,
    });
    return {
      status: 202,
      text:
        `Upgrade of pod ${namespace}/${name} recorded: it starts when the node is connected to cloud again`,
    };
  }

  async #livePod(namespace: string, name: string): Promise<Pod> {
    try {
      return await answeredWithin(
        this.#d.api.getPod({ namespace, name }),
        this.#d.deadlineMs,
        "get pod",
      );
    } catch (err) {
      if (isNotFound(err)) throw podNotFound(namespace, name);
      if (err instanceof KubeError && err.status === 403) {
        // The Node authorizer's answer for a pod not bound to this node.
        throw new OtaError(
          403,
          `Pre check update pod failed, Failed to check pod ${namespace}/${name} status, error: pod is not bound to node ${this.#d.node} (the API server: ${err.message})`,
        );
      }
      if (isUnreachable(err)) throw err;
      throw new OtaError(500, `Get pod failed, ${(err as Error).message}`);
    }
  }

  async #delete(pod: Pod): Promise<void> {
    const { namespace = "", name = "", uid = "" } = pod.metadata;
    try {
      await answeredWithin(
        this.#d.api.deletePod({ namespace, name, uid }),
        this.#d.deadlineMs,
        "delete pod",
      );
    } catch (err) {
      if (isNotFound(err)) throw podNotFound(namespace, name);
      if (isUnreachable(err)) throw err;
      if (err instanceof KubeError && err.status === 403) {
        throw new OtaError(403, `Apply update failed, the API server forbids it: ${err.message}`);
      }
      this.#d.logger.error("OTA upgrade failed", {
        pod: `${namespace}/${name}`,
        error: (err as Error).message,
      });
      throw new OtaError(
        500,
        isConflict(err)
          ? "Apply update failed, the pod was replaced since it was checked"
          : "Apply update failed",
      );
    }
    this.#d.logger.info("OTA upgrade started", {
      pod: `${namespace}/${name}`,
      revision: markedRevision(pod),
    });
  }
}
