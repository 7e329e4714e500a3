/**
 * The dashboard's picture of a set, from the plan the controller would make now (engine/plan.ts,
 * as `status` reads it): a tile per node in its zone, coloured by what the node is doing, and the
 * few numbers and lines an operator looks for. Pure: snapshot and plan in, view out.
 */
import type { BudgetUse, NodeReport, Plan, Snapshot } from "../../api/plan.ts";
import type { SetCondition } from "../../api/kube-objects.ts";
import { setKey, type SetRef } from "../../api/set-ref.ts";
import { readSet } from "../../engine/config.ts";

/** The topology label nodes are grouped by (Kubernetes' well-known zone label). */
export const zoneLabel = "topology.kubernetes.io/zone";
export const noZone = "(no zone)";

/** What a node's tile says, in the order the legend lists them. */
export const tileStates = [
  "updated",
  "updating",
  "old",
  "held",
  "unavailable",
  "cut-off",
  "failed",
] as const;
export type TileState = typeof tileStates[number];

/** The tile of one node: a cut-off node first (nothing reaches it), then a failed pod. */
export function tileState(report: NodeReport): TileState {
  if (report.cutOff) return "cut-off";
  if (report.failed !== undefined) return "failed";
  if (report.revision === "new") return report.available ? "updated" : "updating";
  if (report.leaving) return "updating";
  if (report.revision === "old" && !report.inScope) return "held";
  if (report.revision === "old" && report.available) return "old";
  return "unavailable";
}

export interface Tile {
  node: string;
  state: TileState;
  /** What the tile's tooltip says. */
  title: string;
}

export interface SetEvent {
  type: string;
  reason: string;
  message: string;
  at: string;
}

export interface SetView {
  ref: SetRef;
  key: string;
  revision?: string;
  desired: number;
  updated: number;
  available: number;
  /** Desired nodes without an available pod (the status's numberUnavailable). */
  unavailable: number;
  /** The update budget and its share in use, as the plan resolved it. */
  budget?: BudgetUse;
  paused: boolean;
  /** Why the rollout stopped itself, when it did (ADR 0035). */
  stopped?: string;
  conditions: SetCondition[];
  events: SetEvent[];
  /** Zone name → its tiles, zones and tiles by name. */
  zones: [zone: string, tiles: Tile[]][];
  counts: Record<TileState, number>;
}

const titleOf = (r: NodeReport, state: TileState) =>
  [r.node, state, r.pod, r.failed].filter((part) => part !== undefined).join(" · ");

export function setView(
  ref: SetRef,
  snapshot: Snapshot,
  planned: Plan,
  events: SetEvent[],
): SetView {
  const status = planned.status;
  const desired = status.desiredNumberScheduled ?? 0;
  const reading = readSet(snapshot);
  const zoneOf = new Map(
    snapshot.nodes.map((n) => [n.metadata.name ?? "", n.metadata.labels?.[zoneLabel] ?? noZone]),
  );
  const zones = new Map<string, Tile[]>();
  const counts = Object.fromEntries(tileStates.map((s) => [s, 0])) as Record<TileState, number>;
  for (const report of planned.nodes) {
    const state = tileState(report);
    counts[state]++;
    const zone = zoneOf.get(report.node) ?? noZone;
    if (!zones.has(zone)) zones.set(zone, []);
    zones.get(zone)!.push({ node: report.node, state, title: titleOf(report, state) });
  }
  const byName = (a: { node: string }, b: { node: string }) => a.node.localeCompare(b.node);
  const stop = (status as { rolloutStop?: { reason: string; revision: string } }).rolloutStop;
  return {
    ref,
    key: setKey(ref),
    revision: status.daemonSetHash,
    desired,
    updated: status.updatedNumberScheduled ?? 0,
    available: status.numberAvailable ?? 0,
    unavailable: status.numberUnavailable ?? 0,
    ...(planned.budget ? { budget: planned.budget } : {}),
    paused: reading.ok && reading.config.paused,
    ...(stop ? { stopped: `${stop.reason} (revision ${stop.revision})` } : {}),
    conditions: planned.conditions,
    events,
    zones: [...zones].sort(([a], [b]) => a.localeCompare(b)).map((
      [zone, tiles],
    ) => [zone, tiles.sort(byName)]),
    counts,
  };
}

/** The tiles whose state differs between two views of a set: what an update sends. */
export function changedTiles(before: SetView | undefined, after: SetView): [string, TileState][] {
  const was = new Map(before?.zones.flatMap(([, tiles]) => tiles.map((t) => [t.node, t.state])));
  return after.zones.flatMap(([, tiles]) =>
    tiles.filter((t) => was.get(t.node) !== t.state).map((t) =>
      [t.node, t.state] as [string, TileState]
    )
  );
}
