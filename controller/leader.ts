/**
 * One replica doing the work at a time: a coordination.k8s.io Lease, taken and renewed as
 * client-go's leader election does (ADR 0038). The holder watches and ticks; the others wait,
 * answer curl and the tick by a claim, and take the Lease once its holder stops renewing it.
 * The Lease only saves work: the status claim stays the lock of every reconcile (ADR 0015), so
 * two replicas that both believe they lead (a partition, a paused process) still never act
 * twice.
 *
 * Expiry is judged by this replica's own clock from when it last saw the Lease change, never by
 * the holder's `renewTime`: clocks of two machines need not agree.
 */
import type { KubeApi } from "../kube/api.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../kube/errors.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import type { Logger } from "../lib/log.ts";
import type { TimerHandle, Timers } from "../lib/timers.ts";

export interface LeaseTimes {
  /** How long a Lease not renewed stays its holder's (client-go: 15 s). */
  durationMs: number;
  /** The holder gives up leading when it could not renew for this long (client-go: 10 s). */
  renewDeadlineMs: number;
  /** How often every replica tries to take or renew the Lease (client-go: 2 s). */
  retryPeriodMs: number;
}

/** client-go's defaults, as kube-controller-manager and kruise-manager use them. */
export const defaultLeaseTimes: LeaseTimes = {
  durationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** Times for a Lease of `durationMs`, in client-go's proportions. */
export function leaseTimesFor(durationMs: number): LeaseTimes {
  return {
    durationMs,
    renewDeadlineMs: Math.round(durationMs * 2 / 3),
    retryPeriodMs: Math.max(100, Math.round(durationMs * 2 / 15)),
  };
}

export interface LeaderElectionOptions {
  api: Pick<KubeApi, "getLease" | "createLease" | "replaceLease">;
  namespace: string;
  name: string;
  /** This replica's name in `holderIdentity`: its pod's name in a cluster. */
  identity: string;
  times?: LeaseTimes;
  timers: Timers;
  logger: Logger;
  onStartedLeading(): void;
  /** Called once, when a leader could not renew in time; it must stop acting. */
  onStoppedLeading(): void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** A MicroTime as the API server writes one: six digits of fraction. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

export class LeaderElection {
  readonly #options: LeaderElectionOptions;
  readonly #times: LeaseTimes;
  #leading = false;
  #stopped = false;
  #timer: TimerHandle | undefined;
  #attempt: Promise<void> = Promise.resolve();
  /** The Lease's spec as last seen, and when (our clock): what expiry is judged from. */
  #observed: { record: string; at: number } | undefined;
  #lastRenewed = 0;
  /** The Lease as we last wrote or read it: its resourceVersion is the next write's precondition. */
  #lease: KubeObject | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#options = options;
    this.#times = options.times ?? defaultLeaseTimes;
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Tries at once, then every retry period, until `stop()` or the Lease is lost. */
  start(): void {
    this.#schedule(0);
  }

  /**
   * Stops trying; a leader gives the Lease up (an empty holder), so another replica takes it at
   * its next try instead of waiting for it to expire.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.timers.clearTimeout(this.#timer);
    await this.#attempt;
    if (!this.#leading || !this.#lease) return;
    this.#leading = false;
    const now = this.#options.timers.now();
    const spec = this.#lease.spec as LeaseSpec;
    try {
      await this.#replace({
        ...spec,
        holderIdentity: "",
        leaseDurationSeconds: 1,
        acquireTime: microTime(now),
        renewTime: microTime(now),
      });
      this.#options.logger.info("lease released", this.#fields());
    } catch (err) {
      // It expires by itself: another replica waits one Lease duration instead.
      this.#options.logger.warn("lease not released", {
        ...this.#fields(),
        error: (err as Error).message,
      });
    }
  }

  #fields() {
    const { namespace, name, identity } = this.#options;
    return { lease: `${namespace}/${name}`, identity };
  }

  #schedule(ms: number) {
    if (this.#stopped) return;
    this.#timer = this.#options.timers.setTimeout(() => {
      this.#attempt = this.#try().finally(() => this.#schedule(this.#times.retryPeriodMs));
    }, ms);
  }

  async #try(): Promise<void> {
    const { timers, logger } = this.#options;
    let held: boolean;
    try {
      held = await this.#takeOrRenew(timers.now());
    } catch (err) {
      // Forbidden, unreachable, a wrong namespace: said every retry period, never hidden.
      logger.error("lease not taken or renewed", {
        ...this.#fields(),
        error: (err as Error).message,
      });
      held = false;
    }
    if (this.#stopped) return;
    const now = timers.now();
    if (held) {
      this.#lastRenewed = now;
      if (!this.#leading) {
        this.#leading = true;
        logger.info("lease taken: this replica does the work", this.#fields());
        this.#options.onStartedLeading();
      }
    } else if (this.#leading && now - this.#lastRenewed >= this.#times.renewDeadlineMs) {
      this.#leading = false;
      this.#stopped = true;
      logger.error("lease lost: not renewed within the renew deadline", {
        ...this.#fields(),
        renewDeadlineMs: this.#times.renewDeadlineMs,
      });
      this.#options.onStoppedLeading();
    }
  }

  /** Whether this replica holds the Lease after one try: created, renewed or taken. */
  async #takeOrRenew(now: number): Promise<boolean> {
    const { api, namespace, name, identity } = this.#options;
    const durationSeconds = Math.ceil(this.#times.durationMs / 1000);
    let lease: KubeObject;
    try {
      lease = await api.getLease({ namespace, name });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        this.#lease = await api.createLease({
          namespace,
          body: {
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: 0,
            },
          },
        });
        this.#observe(this.#lease, now);
        return true;
      } catch (created) {
        if (isAlreadyExists(created)) return false;
        throw created;
      }
    }
    this.#lease = lease;
    this.#observe(lease, now);
    const spec = (lease.spec ?? {}) as LeaseSpec;
    const holder = spec.holderIdentity ?? "";
    const validMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== "" && holder !== identity && now < this.#observed!.at + validMs) return false;
    const mine = holder === identity;
    try {
      await this.#replace({
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
      });
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
    this.#observe(this.#lease, now);
    return true;
  }

  async #replace(spec: LeaseSpec): Promise<void> {
    const { api, namespace, name } = this.#options;
    this.#lease = await api.replaceLease({ namespace, name, body: { ...this.#lease!, spec } });
  }

  #observe(lease: KubeObject, now: number) {
    const record = JSON.stringify(lease.spec ?? {});
    if (this.#observed?.record !== record) this.#observed = { record, at: now };
  }
}
