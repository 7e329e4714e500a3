/**
 * The Events one reconcile writes: what it did to pods, told on the set, folded into one Event
 * per type and reason (`SuccessfulDelete: 100 pods: …`), each pod named. A rollout of a thousand
 * nodes then writes a few Events per wave, not two per node: upstream writes one per pod and its
 * recorder's spam filter drops all but 25 per object in five minutes, so a large rollout's
 * Events say little there; here every pod is named in fewer writes (ADR 0032).
 */
import type { PlanEvent } from "../api/plan.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../lib/log.ts";
import type { TimerHandle, Timers } from "../lib/timers.ts";

/** Most characters of a folded message (events.k8s.io holds a note of at most 1 kB). */
export const foldedMessageLimit = 1024;

export function foldSetEvents(events: readonly PlanEvent[]): PlanEvent[] {
  return [
    ...events.filter((e) => !e.onSet),
    ...groupByReason(events.filter((e) => e.onSet))
      .map(foldedGroup),
  ];
}

/** Events grouped by type and reason, in the order each group first appears. */
function groupByReason(events: readonly PlanEvent[]): PlanEvent[][] {
  const groups = new Map<string, PlanEvent[]>();
  for (const event of events) {
    const key = `${event.type}/${event.reason}`;
    const group = groups.get(key);
    if (group) group.push(event);
    else groups.set(key, [event]);
  }
  return [...groups.values()];
}

const foldedGroup = (group: PlanEvent[]) => group.length === 1 ? group[0] : folded(group);

/** One Event for a group: its count, then each message while they fit, then how many did not. */
function folded(group: PlanEvent[]): PlanEvent {
  const { type, reason } = group[0];
  let message = `${group.length} pods: ${group[0].message}`;
  for (const [i, event] of group.entries()) {
    if (i === 0) continue;
    const rest = `; … and ${group.length - i} more`;
    const next = `${message}; ${event.message}`;
    const room = i === group.length - 1 ? foldedMessageLimit : foldedMessageLimit - rest.length;
    if (next.length > room) {
      message += rest;
      break;
    }
    message = next;
  }
  return { type, reason, message, onSet: true };
}

/** Writes one Event about `involved` (the set, or one of its pods). */
export type EventWriter = (involved: KubeObject, event: PlanEvent, now: Date) => Promise<void>;

/** Writes Events through `kube`; one not written is logged: a note's loss fails nothing. */
export function eventWriter(kube: Pick<KubeClient, "recordEvent">, log: Logger): EventWriter {
  return async (involved, event, now) => {
    try {
      await kube.recordEvent(involved, event, now);
    } catch (err) {
      log.warn("event not recorded", { reason: event.reason, error: (err as Error).message });
    }
  };
}

interface Window {
  until: number;
  pending: PlanEvent[];
  involved: KubeObject;
  timer: TimerHandle | undefined;
}

/**
 * Folds a set's Events over time as well, as upstream's event correlator aggregates similar
 * Events: the first of each reason in a window is written at once (a decision is seen when it is
 * made), the others of that window are written as one folded Event when it closes. A rollout of
 * many small steps (each pod's replacement as its predecessor goes) then writes a few Events per
 * reason and window, not one per step (ADR 0038). Only a note for people is kept here: losing
 * it (a killed process) loses Events, never a decision.
 */
export class EventWindows {
  /** Windows open at once, at most: each is a set and a reason that acted lately. */
  static readonly maxOpen = 10_000;
  /** Events held by one window, at most; a folded message names the first and counts the rest. */
  static readonly maxPending = 10_000;
  readonly #windows = new Map<string, Window>();
  readonly #options: { windowMs: number; timers: Timers; write: EventWriter };

  constructor(options: { windowMs: number; timers: Timers; write: EventWriter }) {
    this.#options = options;
  }

  /**
   * Writes or holds a reconcile's Events on the set (unfolded: one per pod), folded by reason;
   * resolves once those written now are.
   */
  async record(setKey: string, involved: KubeObject, events: PlanEvent[]): Promise<void> {
    const now = this.#options.timers.now();
    const writes: Promise<void>[] = [];
    for (const group of groupByReason(events)) {
      const key = `${setKey}\u0000${group[0].type}\u0000${group[0].reason}`;
      const open = this.#windows.get(key);
      if (open && now < open.until) {
        open.pending.push(...group.slice(0, EventWindows.maxPending - open.pending.length));
        open.involved = involved;
        continue;
      }
      // Past the bound, nothing is held: each reconcile's Events are written as they come.
      if (open || this.#windows.size < EventWindows.maxOpen) this.#open(key, involved, now);
      writes.push(this.#options.write(involved, foldedGroup(group), new Date(now)));
    }
    await Promise.all(writes);
  }

  /** Writes every held Event now (a controller that stops). */
  async flush(): Promise<void> {
    const keys = [...this.#windows.keys()];
    await Promise.all(keys.map((key) => this.#close(key, false)));
  }

  #open(key: string, involved: KubeObject, now: number) {
    const { windowMs, timers } = this.#options;
    const window: Window = { until: now + windowMs, pending: [], involved, timer: undefined };
    window.timer = timers.setTimeout(() => void this.#close(key, true), windowMs);
    this.#windows.set(key, window);
  }

  /** Writes what the window holds; one that held some opens the next (`reopen`). */
  async #close(key: string, reopen: boolean) {
    const window = this.#windows.get(key);
    if (!window) return;
    this.#options.timers.clearTimeout(window.timer);
    this.#windows.delete(key);
    if (window.pending.length === 0) return;
    const now = this.#options.timers.now();
    if (reopen) this.#open(key, window.involved, now);
    await this.#options.write(window.involved, foldedGroup(window.pending), new Date(now));
  }
}
