/**
 * The dashboard's picture of a set, from the plan the controller would make now (engine/plan.ts,
 * as `status` reads it): a tile per node in its group (the rollout plan's domain, or its zone when
 * the set has no plan), coloured by what the node is doing, and the few numbers and lines an
 * operator looks for. Pure: snapshot and plan in, view out.
 */
import type { BudgetUse, NodeReport, Plan, Snapshot } from "../../api/plan.ts";
import type { SetCondition } from "../../api/kube-objects.ts";
import { type RolloutPlanStatus, unlabelledDomain } from "../../api/rollout-plan.ts";
import type { MaintenanceStatus } from "../../api/maintenance.ts";
import type { AnalysisStatus } from "../../api/analysis.ts";
import { setKey, type SetRef } from "../../api/set-ref.ts";
import { readSet } from "../../engine/config.ts";
import { type ChartReading, domainsOfNodes, readChart } from "../rollout-chart.ts";

/** The topology label nodes are grouped by without a plan (Kubernetes' well-known zone label). */
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
  /** The label the tiles are grouped by: the plan's domain label, or the zone label. */
  groupLabel: string;
  /**
   * Group → its tiles: the plan's domains in the plan's order, or the zones by name; tiles by
   * name.
   */
  groups: [group: string, tiles: Tile[]][];
  counts: Record<TileState, number>;
  /** Where the current revision's rollout plan stands (ADR 0050), when the set has one. */
  plan?: RolloutPlanStatus;
  /** The maintenance windows the outdated nodes wait for (ADR 0054), while some do. */
  maintenance?: MaintenanceStatus;
  /** The analysis checks' standing per domain (ADR 0055), when the set has checks. */
  analysis?: AnalysisStatus;
  /** Updated and unavailable per domain now, for the chart the stream draws over time. */
  chart: ChartReading;
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
  const domainLabel = reading.ok ? reading.config.rolloutPlan?.plan.domainLabel : undefined;
  const groupLabel = domainLabel ?? zoneLabel;
  const groupOf = domainLabel !== undefined ? domainsOfNodes(snapshot, reading, noZone) : new Map(
    snapshot.nodes.map((n) => [n.metadata.name ?? "", n.metadata.labels?.[zoneLabel] ?? noZone]),
  );
  const none = domainLabel !== undefined ? unlabelledDomain(domainLabel) : noZone;
  const plan = status.plan?.revision === status.daemonSetHash ? status.plan : undefined;
  // The plan's domains in its order; zones (and domains a stale status does not list) by name.
  const order = new Map(plan?.domains.map((d, i) => [d.name, i]));
  const rank = (group: string) => order.get(group) ?? order.size;
  const groups = new Map<string, Tile[]>();
  const counts = Object.fromEntries(tileStates.map((s) => [s, 0])) as Record<TileState, number>;
  for (const report of planned.nodes) {
    const state = tileState(report);
    counts[state]++;
    const group = groupOf.get(report.node) ?? none;
    if (!groups.has(group)) groups.set(group, []);
    groups.get(group)!.push({ node: report.node, state, title: titleOf(report, state) });
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
    groupLabel,
    groups: [...groups]
      .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
      .map(([group, tiles]) => [group, tiles.sort(byName)]),
    counts,
    ...(plan ? { plan } : {}),
    ...(status.maintenance ? { maintenance: status.maintenance } : {}),
    ...(status.analysis?.checks.length ? { analysis: status.analysis } : {}),
    chart: readChart(snapshot, planned, reading),
  };
}

/** The tiles whose state differs between two views of a set: what an update sends. */
export function changedTiles(before: SetView | undefined, after: SetView): [string, TileState][] {
  const was = new Map(before?.groups.flatMap(([, tiles]) => tiles.map((t) => [t.node, t.state])));
  return after.groups.flatMap(([, tiles]) =>
    tiles.filter((t) => was.get(t.node) !== t.state).map((t) =>
      [t.node, t.state] as [string, TileState]
    )
  );
}
