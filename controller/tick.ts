/**
 * The tick: reconciles every set that asked to be looked at again (`status.nextCheckAt`
 * passed) or whose spec moved (`metadata.generation` ahead of `status.observedGeneration`),
 * and every set at a slower full resync, because events can be lost.
 */
import { isManagedDaemonSet } from "../api/openyurt.ts";
import type { KubeClient } from "../kube/client.ts";
import { type SetRead, writtenStatus } from "../api/written-status.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { setKey, type SetKind, type SetRef } from "../api/set-ref.ts";
import { failureOf } from "./errors.ts";
import { forEachConcurrently } from "../lib/concurrently.ts";
import type { Reconcile } from "./reconciler.ts";

export interface TickDeps {
  kube: KubeClient;
  reconcile: Reconcile;
  clock: () => number;
  /** Seconds between full resyncs. */
  resyncSeconds: number;
  /** Sets reconciled at the same time. */
  concurrency?: number;
}

export interface TickEntry {
  set: string;
  why: "nextCheckAt" | "generation" | "resync";
  result: string;
  actions?: number;
  error?: string;
}

export interface TickAnswer {
  full: boolean;
  /** The kinds of set the API server serves (discovery): AdvancedDaemonSets need the CRD. */
  served: SetKind[];
  sets: number;
  reconciled: TickEntry[];
}

interface StatusSeen {
  nextCheckAt?: string;
  observedGeneration?: number;
}

export function dueReason(
  kind: SetKind,
  read: SetRead & { set: KubeObject },
  now: number,
  full: boolean,
): TickEntry["why"] | undefined {
  const status = (writtenStatus(kind, read) ?? {}) as StatusSeen;
  const generation = read.set.metadata.generation;
  if (generation !== undefined && generation !== status.observedGeneration) return "generation";
  if (status.nextCheckAt !== undefined && Date.parse(status.nextCheckAt) <= now) {
    return "nextCheckAt";
  }
  return full ? "resync" : undefined;
}

/**
 * Every set edgeroll manages: all AdvancedDaemonSets and Kruise DaemonSets (when served), plain
 * DaemonSets with the OpenYurt annotation.
 * Only kinds that discovery says are served are listed; a list that fails still fails.
 */
export async function listManagedSets(
  kube: KubeClient,
): Promise<{ served: SetKind[]; sets: { ref: SetRef; object: KubeObject }[] }> {
  const served = await kube.servedSetKinds();
  const lists = await Promise.all(
    served.map(async (kind) => ({ kind, items: await kube.listSets(kind) })),
  );
  const sets = managedSets(
    lists.flatMap(({ kind, items }) => items.map((object) => ({ kind, object }))),
  );
  return { served, sets };
}

/** The sets edgeroll manages of those given (a plain DaemonSet only with OpenYurt's annotation). */
function managedSets(
  sets: { kind: SetKind; object: KubeObject }[],
): { ref: SetRef; object: KubeObject }[] {
  return sets
    .filter(({ kind, object }) => kind !== "daemonsets" || isManagedDaemonSet(object))
    .map(({ kind, object }) => ({
      ref: { kind, namespace: object.metadata.namespace ?? "", name: object.metadata.name ?? "" },
      object,
    }));
}

/**
 * The managed sets a fan-out to every set queues: from the cache's set watches while they are
 * all open (no request), from discovery and a list per kind otherwise.
 */
export async function managedSetRefs(kube: KubeClient): Promise<SetRef[]> {
  const cached = kube.cache?.sets();
  const sets = cached ? managedSets(cached) : (await listManagedSets(kube)).sets;
  return sets.map(({ ref }) => ref);
}

/** A managed set as listed, with its plain DaemonSet's RolloutStatus where one exists. */
export interface ListedSet {
  ref: SetRef;
  object: KubeObject;
  rolloutStatus?: KubeObject;
}

/**
 * Each plain DaemonSet of `sets` with its RolloutStatus, found by one list of them all (none when
 * no plain DaemonSet is managed): what reading their written status needs.
 */
export async function withRolloutStatuses(
  kube: KubeClient,
  sets: { ref: SetRef; object: KubeObject }[],
): Promise<ListedSet[]> {
  if (!sets.some(({ ref }) => ref.kind === "daemonsets")) return sets;
  const byKey = new Map(
    (await kube.listRolloutStatuses()).map((o) => [
      `${o.metadata.namespace}/${o.metadata.name}`,
      o,
    ]),
  );
  return sets.map((entry) => {
    const rolloutStatus = entry.ref.kind === "daemonsets"
      ? byKey.get(`${entry.ref.namespace}/${entry.ref.name}`)
      : undefined;
    return rolloutStatus ? { ...entry, rolloutStatus } : entry;
  });
}

export function createTicker(deps: TickDeps) {
  let lastFull = Number.NEGATIVE_INFINITY;
  return async (forceFull = false): Promise<TickAnswer> => {
    const now = deps.clock();
    const full = forceFull || now - lastFull >= deps.resyncSeconds * 1000;
    const { served, sets: listed } = await listManagedSets(deps.kube);
    const sets = await withRolloutStatuses(deps.kube, listed);
    if (full) lastFull = now;
    const due = sets.flatMap(({ ref, object, rolloutStatus }) => {
      const why = dueReason(ref.kind, { set: object, rolloutStatus }, now, full);
      return why ? [{ ref, why }] : [];
    });
    const reconciled: TickEntry[] = [];
    await forEachConcurrently(due, deps.concurrency ?? 4, async (next) => {
      const entry: TickEntry = { set: setKey(next.ref), why: next.why, result: "ok" };
      try {
        const answer = await deps.reconcile(next.ref);
        entry.actions = answer.actions.length;
        entry.result = answer.actions.some((a) => a.result === "failed") ? "partial" : "ok";
      } catch (err) {
        const failure = failureOf(err);
        entry.result = failure.reason;
        entry.error = failure.message;
      }
      reconciled.push(entry);
    });
    reconciled.sort((a, b) => a.set.localeCompare(b.set));
    return { full, served, sets: sets.length, reconciled };
  };
}

export type Ticker = ReturnType<typeof createTicker>;
