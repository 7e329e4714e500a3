/**
 * What `plan` costs and how fast it rolls: median time and heap allocated by one `plan` on a
 * fleet mid-rollout, and the number of waves a simulated rollout needs against the theoretical
 * minimum ceil(nodes / budget). Prints tables; never fails a build.
 *
 *   deno run --v8-flags=--expose-gc bench/engine.ts
 */
import { plan } from "../engine/plan.ts";
import * as f from "../engine/testdata/fleet.ts";
import type { Snapshot } from "../api/plan.ts";
import { markdownTable } from "./markdown-table.ts";
import type { MaintenanceInput } from "../api/maintenance.ts";
import type { RolloutPlanInput } from "../api/rollout-plan.ts";

type RollingUpdate = {
  maxUnavailable?: number | string;
  maxSurge?: number | string;
  plan?: RolloutPlanInput;
  maintenance?: MaintenanceInput;
};

const zoneLabel = "topology.kubernetes.io/zone";

const timeZoneLabel = "edgeroll.dev/time-zone";
/** The sites' time zones, one a node in turn, for the fleet with windows. */
const timeZones = ["Asia/Tokyo", "Europe/Berlin", "America/New_York"];

/**
 * Windows read in each node's zone, open from the fleet's clock (f.t0, 2026-01-01T00:00Z: 09:00
 * in Tokyo, 01:00 in Berlin, 19:00 the day before in New York) for the whole measure.
 */
const nightAndDay: MaintenanceInput = {
  timeZoneLabel,
  windows: [{ start: "00:00", end: "23:00" }],
  cutoffMinutes: 10,
};

/** The fleet, its nodes spread over `domains` zones when given (and over 3 time zones). */
function fleet(nodes: number, rollingUpdate: RollingUpdate, domains?: number): Snapshot {
  return {
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({
      updateStrategy: { type: "RollingUpdate", rollingUpdate },
    }) as Snapshot["set"],
    pods: [],
    nodes: f.nodes(nodes).map((n, i) =>
      domains === undefined ? n : {
        ...n,
        metadata: {
          ...n.metadata,
          labels: {
            [zoneLabel]: `zone-${i % domains}`,
            [timeZoneLabel]: timeZones[i % timeZones.length],
          },
        },
      }
    ),
    revisions: [],
  };
}

/** A rollout plan over the zones: 5 at once, half of each at a time (ADR 0050). */
const zonePlan: RolloutPlanInput = {
  domainLabel: zoneLabel,
  maxConcurrentDomains: 5,
  domainMaxUnavailable: "50%",
  steps: [{ nodes: "100%" }],
};

/** Runs plan → apply → kubelet until nothing is planned; returns the cluster and the clock. */
function settle(
  c: f.Cluster,
  now: number,
  onPlan?: (actions: string[]) => void,
): [f.Cluster, number] {
  for (let i = 0; i < 10_000; i++) {
    const p = plan(c.snapshot, now);
    if (p.actions.length === 0) return [c, now];
    onPlan?.(p.actions.map((a) => a.type));
    c = f.kubelet(f.apply(c, p, now), now);
    now += 1000;
  }
  throw new Error("no convergence in 10,000 calls");
}

/** A fleet on agent:v1 switched to v2 and rolled part of the way. */
function midRollout(nodes: number, domains?: number, windows = false): [Snapshot, number] {
  const rollingUpdate = {
    maxUnavailable: "10%",
    ...(domains ? { plan: zonePlan } : {}),
    ...(windows ? { maintenance: nightAndDay } : {}),
  };
  let [c, now] = settle(f.cluster(fleet(nodes, rollingUpdate, domains)), f.t0);
  c = f.withTemplate(c, "agent:v2", 2);
  for (let i = 0; i < 6; i++) {
    const p = plan(c.snapshot, now);
    c = f.kubelet(f.apply(c, p, now), now);
    now += 1000;
  }
  return [c.snapshot, now];
}

const gc = (globalThis as { gc?: () => void }).gc;

function measurePlan([nodes, domains, windows]: [number, number?, boolean?]): string[] {
  const [snapshot, now] = midRollout(nodes, domains, windows);
  const times: number[] = [];
  for (let i = 0; i < 21; i++) {
    const started = performance.now();
    plan(snapshot, now);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  let allocated = "n/a (run with --v8-flags=--expose-gc)";
  if (gc) {
    gc();
    const before = Deno.memoryUsage().heapUsed;
    plan(snapshot, now);
    allocated = `${((Deno.memoryUsage().heapUsed - before) / 1e6).toFixed(1)} MB`;
  }
  const sample = plan(snapshot, now);
  return [
    domains
      ? `${nodes} in ${domains} zones, with a plan${
        windows ? ` and windows in ${timeZones.length} time zones` : ""
      }`
      : String(nodes),
    `${times[10].toFixed(1)} ms`,
    `${times[0].toFixed(1)} ms`,
    allocated,
    `${sample.status.updatedNumberScheduled}/${nodes} updated, ${sample.actions.length} actions`,
  ];
}

/** Calls that started replacements (deletions for Standard, creations for Surging). */
function measureWaves(nodes: number, mode: "Standard" | "Surging", budget: number): string[] {
  const rollingUpdate = mode === "Standard"
    ? { maxUnavailable: budget }
    : { maxSurge: budget, maxUnavailable: 0 };
  let [c, now] = settle(f.cluster(fleet(nodes, rollingUpdate)), f.t0);
  c = f.withTemplate(c, "agent:v2", 2);
  let waves = 0;
  let calls = 0;
  const starts = mode === "Standard" ? "deletePod" : "createPod";
  [c, now] = settle(c, now, (actions) => {
    calls++;
    if (actions.includes(starts)) waves++;
  });
  const done = plan(c.snapshot, now).status.updatedNumberScheduled === nodes;
  return [
    mode,
    String(nodes),
    String(budget),
    String(waves),
    String(Math.ceil(nodes / budget)),
    `${calls}${done ? "" : " (not finished)"}`,
  ];
}

export function benchEngine(): string {
  const timing = markdownTable(
    ["nodes", "plan median (21 runs)", "fastest", "heap allocated by one plan", "snapshot"],
    ([[1000], [5000], [5000, 50], [5000, 50, true]] as [number, number?, boolean?][]).map(
      measurePlan,
    ),
  );
  const waves = markdownTable(
    ["strategy", "nodes", "budget", "waves", "ceil(nodes/budget)", "plan calls"],
    [
      measureWaves(1000, "Standard", 100),
      measureWaves(1000, "Surging", 100),
      measureWaves(5000, "Standard", 500),
      measureWaves(5000, "Surging", 250),
    ],
  );
  return `engine: plan on a fleet mid-rollout (Standard, maxUnavailable 10%)\n\n${timing}\n` +
    "The median moves with the machine's load (2 shared cores); the fastest run is the cost.\n\n" +
    `engine: waves to finish a rollout (simulated clock, 1 s a call, healthy nodes)\n\n${waves}\n` +
    "A wave is a call that starts replacements. burstReplicas (250) caps creations per call, so a\n" +
    "Standard budget of 500 takes 500 nodes in the first wave, then 250 a call: 1 + 4500/250 = 19.";
}

if (import.meta.main) console.log(benchEngine());
