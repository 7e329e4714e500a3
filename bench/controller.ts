/**
 * The controller against the simulator (real HTTP app, real client-node, relay): API requests
 * and latency of one reconcile of a converged set at 1,000 and 5,000 nodes, and the wall time
 * of a rollout at 1,000 nodes against its theoretical minimum. Prints tables; never fails.
 *
 *   deno run -A bench/controller.ts [--quick] [--nodes N]
 */
import { parseArgs } from "node:util";
import { createLogger } from "../cli/log.ts";
import { startRelay } from "../relay/relay.ts";
import { DEFAULT_DURATIONS } from "../sim/cluster/context.ts";
import {
  controllerToken,
  createAgentSet,
  eventually,
  rolledOut,
  setAgentImage,
  withControllerOnSim,
} from "../tests/controller-on-sim.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { quick: { type: "boolean" }, nodes: { type: "string" } },
  strict: true,
});
const quick = flags.quick === true;
const logger = createLogger({ level: "error" });
/** Simulated time factor of the measured rollout (1 = realistic seconds). */
const rolloutSpeed = 5;
const reconcilePath = "/reconcile/advanceddaemonsets/default/agent";

function table(title: string, header: string[], rows: string[][]) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    "| " + cells.map((c, i) => c.padEnd(widths[i])).join(" | ") + " |";
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|");
  for (const row of rows) console.log(line(row));
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

interface Measured {
  steady: string[];
  rollout?: string[];
}

async function measure(nodes: number, rollout: boolean): Promise<Measured> {
  const result: Measured = { steady: [] };
  // The fleet is created at speed 10, 2 at 5,000 nodes (faster, heartbeats starve the one
  // process that holds simulator, controller and relay);
  // the steady state is measured at speed 1, the rollout runs at `rolloutSpeed`.
  await withControllerOnSim(
    { nodes, speed: nodes <= 1000 ? 10 : 2, logger },
    async ({ sim, kc, controller, post }) => {
      const relay = startRelay({
        kubeConfig: kc,
        target: controller.url,
        token: controllerToken,
        logger,
        flushMs: 100,
      });
      try {
        const created = performance.now();
        await createAgentSet(kc, "agent:1", "10%");
        await eventually("the fleet", () => Promise.resolve(rolledOut(sim, 1, "agent:1")), 300_000);
        const createSeconds = (performance.now() - created) / 1000;

        // Heartbeats at realistic pace while we measure: at speed 200 they would dominate.
        await fetch(`${sim.url}/sim/v1/faults`, {
          method: "PUT",
          body: JSON.stringify({ speed: 1 }),
        })
          .then((r) => r.body?.cancel());
        const stats = async () =>
          (await (await fetch(`${sim.url}/sim/v1/stats`)).json()).requests.byVerb;
        const calls = quick ? 10 : 20;
        const before = await stats();
        const times: number[] = [];
        for (let i = 0; i < calls; i++) {
          const started = performance.now();
          const { status } = await post(reconcilePath);
          times.push(performance.now() - started);
          if (status !== 200) throw new Error(`reconcile answered ${status}`);
        }
        const after = await stats();
        // The relay's watches and the controller's own event-driven reconciles run meanwhile;
        // a converged fleet gives them nothing to do, so the difference is ours.
        const per = (verb: string) => ((after[verb] ?? 0) - (before[verb] ?? 0)) / calls;
        const writes = ["create", "update", "patch", "delete"].reduce((n, v) => n + per(v), 0);
        times.sort((a, b) => a - b);
        result.steady = [
          String(nodes),
          `${createSeconds.toFixed(1)} s`,
          `${per("get")} get + ${per("list")} list`,
          String(writes),
          `${percentile(times, 0.5).toFixed(0)} ms`,
          `${percentile(times, 0.9).toFixed(0)} ms`,
        ];

        if (rollout) {
          await fetch(`${sim.url}/sim/v1/faults`, {
            method: "PUT",
            body: JSON.stringify({ speed: rolloutSpeed }),
          })
            .then((r) => r.body?.cancel());
          const started = performance.now();
          await setAgentImage(kc, "agent:2");
          await eventually(
            "the rollout",
            () => Promise.resolve(rolledOut(sim, 2, "agent:2")),
            600_000,
          );
          const wall = (performance.now() - started) / 1000;
          const budget = Math.ceil(nodes * 0.1);
          const waves = Math.ceil(nodes / budget);
          const d = DEFAULT_DURATIONS;
          // One wave: the old pod terminates, the new one pulls its image and starts; minReadySeconds 0.
          const perWave = (d.terminationSeconds + d.pullSeconds + d.cachedStartSeconds) /
            rolloutSpeed;
          const minimum = waves * perWave;
          result.rollout = [
            String(nodes),
            `${budget} (10%)`,
            String(waves),
            `${perWave.toFixed(2)} s`,
            `${minimum.toFixed(1)} s`,
            `${wall.toFixed(1)} s`,
            `${(((wall - minimum) / minimum) * 100).toFixed(0)}%`,
          ];
        }
      } finally {
        await relay.stop();
      }
    },
  );
  return result;
}

const sizes = flags.nodes !== undefined ? [Number(flags.nodes)] : quick ? [200] : [1000, 5000];
const steadyTitle =
  "controller: one reconcile of a converged AdvancedDaemonSet (HTTP → client-node → sim)";
const steadyHeader = [
  "nodes",
  "fleet created in",
  "requests / reconcile",
  "writes / reconcile",
  "p50",
  "p90",
];
const rolloutTitle =
  `controller: rollout wall time against waves × (terminate + pull + start) / speed (${rolloutSpeed})`;
const rolloutHeader = [
  "nodes",
  "maxUnavailable",
  "waves",
  "per wave",
  "minimum",
  "wall time",
  "over minimum",
];
const steady: string[][] = [];
const rollouts: string[][] = [];
for (const nodes of sizes) {
  try {
    const m = await measure(nodes, nodes === sizes[0]);
    steady.push(m.steady);
    if (m.rollout) rollouts.push(m.rollout);
  } catch (err) {
    steady.push([String(nodes), (err as Error).message, "", "", "", ""]);
  }
  // Printed after each size, so a long run shows what it has.
  table(steadyTitle, steadyHeader, steady);
  if (rollouts.length > 0) table(rolloutTitle, rolloutHeader, rollouts);
}
