/**
 * A bench:peers row (one contender's rollout in one run) and the figures judged on, with their
 * medians over runs: shared by the bench, which writes them, and bench:report, which takes the
 * runs of several invocations together.
 */
import type { ComponentLoad, PodPhases, RequestCounts } from "./peers-measure.ts";
import { median, sum } from "./stats.ts";

/** A figure over runs: its median and range. */
export interface Figure {
  median: number;
  min: number;
  max: number;
}

export interface Row {
  /** Which round of `--runs` measured it, from 1. */
  run: number;
  contender: string;
  row: string;
  nodes: number;
  cut: number;
  /** Nodes the rollout had to update (the connected ones). */
  target: number;
  updated: number;
  completed: boolean;
  wallSeconds: number;
  minimumSeconds: number;
  requests: RequestCounts;
  bytesRead: number;
  cpuSeconds: number;
  peakRssMiB: number[];
  /** Hot standbys' peak RSS, apart from the processes doing the work. */
  standbyPeakRssMiB: number[];
  maxUnavailable: number;
  budgetUnavailable: number;
  /** kube-apiserver's and etcd's own load over the same window. */
  controlPlane: Record<string, ComponentLoad>;
  /**
   * kwok's and the bench's own load over the same window: on two cores, a harness behind its
   * work slows every contender alike (absent from runs before session 20).
   */
  harness?: Record<string, ComponentLoad>;
  /** Times the bench's own pod watch was opened again (resumed, listed again), so far. */
  watchRestarts: number;
  /** Where the nodes' time went: the controller's turn, then the kubelet's. */
  podPhases?: PodPhases;
  /** Connected nodes that turned NotReady in the window (the fleet's own heartbeats behind). */
  nodesTurnedNotReady?: number;
  maxNodesNotReady?: number;
  /**
   * Why this run is not counted, written into its result by hand when the machine was not the
   * bench's alone while it ran (the report names it, and takes the medians without it).
   */
  setAside?: string;
}

/** Each figure of a row; undefined where a row from an older bench did not measure it. */
export const figures: { name: string; of: (r: Row) => number | undefined; digits: number }[] = [
  { name: "wall s", of: (r) => r.wallSeconds, digits: 1 },
  { name: "× minimum", of: (r) => r.wallSeconds / r.minimumSeconds, digits: 2 },
  { name: "requests / node", of: (r) => r.requests.requests / Math.max(1, r.updated), digits: 2 },
  { name: "writes / node", of: (r) => r.requests.writes / Math.max(1, r.updated), digits: 2 },
  { name: "409s", of: (r) => r.requests.conflicts, digits: 0 },
  { name: "MiB read", of: (r) => r.bytesRead / 2 ** 20, digits: 1 },
  { name: "CPU s", of: (r) => r.cpuSeconds, digits: 1 },
  { name: "peak RSS MiB, summed", of: (r) => sum(r.peakRssMiB), digits: 0 },
  { name: "standby RSS MiB", of: (r) => sum(r.standbyPeakRssMiB), digits: 0 },
  {
    name: "kube-apiserver CPU s",
    of: (r) => r.controlPlane["kube-apiserver"].cpuSeconds,
    digits: 1,
  },
  {
    name: "kube-apiserver peak MiB",
    of: (r) => r.controlPlane["kube-apiserver"].peakMiB,
    digits: 0,
  },
  { name: "etcd CPU s", of: (r) => r.controlPlane.etcd.cpuSeconds, digits: 1 },
  { name: "etcd peak MiB", of: (r) => r.controlPlane.etcd.peakMiB, digits: 0 },
  // A node's turn, median: the controller's part (old pod deleted → new pod), the kubelet's.
  { name: "old pod → new pod s", of: (r) => r.podPhases?.oldDeletedToNew.p50, digits: 1 },
  { name: "new pod → available s", of: (r) => r.podPhases?.newToAvailable.p50, digits: 1 },
  { name: "created → Ready s (server)", of: (r) => r.podPhases?.createdToReady?.p50, digits: 1 },
  { name: "nodes turned NotReady", of: (r) => r.nodesTurnedNotReady, digits: 0 },
];

/** A contender's rows over the runs: with the same nodes cut, in the order first measured. */
function groupsOf(rows: Row[]): Row[][] {
  const groups = new Map<string, Row[]>();
  for (const row of rows) {
    const key = `${row.contender}/${row.cut}`;
    groups.set(key, [...groups.get(key) ?? [], row]);
  }
  return [...groups.values()];
}

/** A figure as the tables print it: "24.5 (24.0–24.8)", or "—" where it was not measured. */
export const figureText = (f: Figure | undefined, digits: number) =>
  f ? `${f.median.toFixed(digits)} (${f.min.toFixed(digits)}–${f.max.toFixed(digits)})` : "—";

/** Each figure's median over the runs, with its lowest and highest. */
export function mediansOf(rows: Row[]) {
  return groupsOf(rows).map((group) => ({
    contender: group[0].contender,
    row: group[0].row,
    cut: group[0].cut,
    runs: group.length,
    completed: group.filter((r) => r.completed).length,
    maxUnavailable: Math.max(...group.map((r) => r.maxUnavailable)),
    budgetUnavailable: group[0].budgetUnavailable,
    figures: Object.fromEntries(figures.flatMap(({ name, of }) => {
      const values = group.map(of).filter((v): v is number => v !== undefined && !isNaN(v));
      if (values.length === 0) return [];
      return [[name, {
        median: median(values),
        min: Math.min(...values),
        max: Math.max(...values),
      }]];
    })) as Record<string, Figure>,
  }));
}
