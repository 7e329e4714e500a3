/**
 * The controller as it runs in a cluster: the simulator, `serve` and `relay` each in its own
 * process (tests/processes.ts), talking HTTP. Measures the API requests and latency of one
 * reconcile of a converged set and the resident memory of serve and relay (with the image's
 * V8 flags) at 1,000 and 5,000 nodes, and the wall time of a rollout at 1,000 nodes against
 * its theoretical minimum; and the serverless shape: a `serve --no-cache` started cold for one
 * call, timed from exec to its answer, with its peak memory. Prints tables; never fails.
 *
 *   deno run -A bench/controller.ts [--quick] [--nodes N]
 */
import { parseArgs } from "node:util";
import { markdownTable } from "./markdown-table.ts";
import { getJson, installEdgerollCrds, setSpeed, untilRolledOut } from "./sim-rollout.ts";
import { DEFAULT_DURATIONS } from "../sim/cluster/context.ts";
import { createAgentSet, setAgentImage } from "../tests/controller-on-sim.ts";
import { freePort } from "../cluster/processes.ts";
import {
  imageEnv,
  residentMiB,
  spawnMain,
  stop,
  withEdgeroll,
  withSimProcess,
} from "../tests/processes.ts";
import { median, percentile } from "./stats.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { quick: { type: "boolean" }, nodes: { type: "string" } },
  strict: true,
});
const quick = flags.quick === true;
/** Simulated time factor of the measured rollout (1 = realistic seconds). */
const rolloutSpeed = 5;
const reconcilePath = "/reconcile/advanceddaemonsets/default/agent";

function table(title: string, header: string[], rows: string[][]) {
  console.log(`\n${title}\n`);
  console.log(markdownTable(header, rows));
}

/** Resident MiB of a running process, as the tables print it (limits come from the peak). */
const residentMb = (pid: number, field: "VmRSS" | "VmHWM") => residentMiB(pid, field)!.toFixed(0);

/** How long the fleet rests before its resident memory is read: V8 gives back after idling. */
const restMs = 20_000;

interface Measured {
  steady: string[];
  cold: string[];
  rollout?: string[];
}

/**
 * The serverless shape: `serve --no-cache` started for one call, as a scale-from-zero platform
 * does (the image's V8 flags), asked whether it is ready every 5 ms, then to reconcile; each
 * process is stopped before the next starts. Exec to ready, exec to the call's answer, and the
 * process's peak resident memory, over `runs` processes.
 */
async function coldCalls(kubeconfigPath: string, runs: number) {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-cold-" });
  const token = crypto.randomUUID();
  await Deno.writeTextFile(`${dir}/token`, token);
  const ready: number[] = [];
  const answered: number[] = [];
  const peak: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const port = freePort();
      const url = `http://127.0.0.1:${port}`;
      const started = performance.now();
      const child = spawnMain([
        "serve",
        "--no-cache",
        "--host=127.0.0.1",
        `--port=${port}`,
        `--kubeconfig=${kubeconfigPath}`,
        `--token-file=${dir}/token`,
      ], imageEnv());
      try {
        for (;;) {
          const response = await fetch(`${url}/readyz`).catch(() => undefined);
          await response?.body?.cancel();
          if (response?.ok) break;
          if (performance.now() - started > 30_000) throw new Error("serve did not start in 30 s");
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        ready.push(performance.now() - started);
        const response = await fetch(`${url}${reconcilePath}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
        });
        await response.body?.cancel();
        if (response.status !== 200) throw new Error(`cold reconcile answered ${response.status}`);
        answered.push(performance.now() - started);
        peak.push(residentMiB(child.pid, "VmHWM")!);
      } finally {
        await stop([child]);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const range = (xs: number[], digits: number) =>
    `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${
      Math.max(...xs).toFixed(digits)
    })`;
  return [range(ready, 0) + " ms", range(answered, 0) + " ms", range(peak, 0) + " MiB"];
}

async function measure(nodes: number, rollout: boolean): Promise<Measured> {
  const result: Measured = { steady: [], cold: [] };
  // The fleet is created fast (speed 10); the steady state is measured at speed 1 (realistic
  // heartbeats), the rollout at `rolloutSpeed`.
  await withSimProcess({ nodes, zones: 4, speed: 10 }, async (sim) => {
    const kc = await installEdgerollCrds(sim);
    // serve and relay run with the container image's V8 flags, so the memory is the image's.
    await withEdgeroll(sim.kubeconfigPath, { env: imageEnv() }, async (controller) => {
      const created = performance.now();
      await createAgentSet(kc, "agent:1", "10%");
      await untilRolledOut(sim, nodes, 1, "agent:1", 600_000);
      const createSeconds = (performance.now() - created) / 1000;

      await setSpeed(sim, 1);
      const stats = async () =>
        (await getJson<{ requests: { byVerb: Record<string, number> } }>(
          `${sim.url}/sim/v1/stats`,
        )).requests.byVerb;
      const calls = quick ? 10 : 20;
      const before = await stats();
      const times: number[] = [];
      for (let i = 0; i < calls; i++) {
        const started = performance.now();
        const response = await fetch(`${controller.url}${reconcilePath}`, {
          method: "POST",
          headers: { authorization: `Bearer ${controller.token}` },
        });
        await response.body?.cancel();
        times.push(performance.now() - started);
        if (response.status !== 200) throw new Error(`reconcile answered ${response.status}`);
      }
      const after = await stats();
      // The relay's watches and the controller's own event-driven reconciles run meanwhile;
      // a converged fleet gives them nothing to do, so the difference is ours (and the
      // bench's own two stats reads).
      const per = (verb: string) => ((after[verb] ?? 0) - (before[verb] ?? 0)) / calls;
      const writes = ["create", "update", "patch", "delete"].reduce((n, v) => n + per(v), 0);
      await new Promise((resolve) => setTimeout(resolve, restMs));
      const pids = controller.pids ?? [];
      const memory = (field: "VmRSS" | "VmHWM") =>
        pids.map((pid) => residentMb(pid, field)).join(" / ");
      result.steady = [
        String(nodes),
        `${createSeconds.toFixed(1)} s`,
        `${per("get")} get + ${per("list")} list`,
        String(writes),
        `${percentile(times, 0.5).toFixed(0)} ms`,
        `${percentile(times, 0.9).toFixed(0)} ms`,
        `${memory("VmRSS")} MiB`,
        `${memory("VmHWM")} MiB`,
      ];

      result.cold = [String(nodes), ...await coldCalls(sim.kubeconfigPath, quick ? 3 : 5)];

      if (rollout) {
        await setSpeed(sim, rolloutSpeed);
        const started = performance.now();
        await setAgentImage(kc, "agent:2");
        await untilRolledOut(sim, nodes, 2, "agent:2", 600_000);
        const wall = (performance.now() - started) / 1000;
        const budget = Math.ceil(nodes * 0.1);
        const waves = Math.ceil(nodes / budget);
        const d = DEFAULT_DURATIONS;
        // One wave: the old pod terminates, the new one pulls its image and starts; minReadySeconds 0.
        const perWave = (d.terminationSeconds + d.pullSeconds + d.cachedStartSeconds) /
          rolloutSpeed;
        const minimum = waves * perWave;
        const [serveMb, relayMb] = (controller.pids ?? []).map((pid) => residentMb(pid, "VmHWM"));
        result.rollout = [
          String(nodes),
          `${budget} (10%)`,
          String(waves),
          `${perWave.toFixed(2)} s`,
          `${minimum.toFixed(1)} s`,
          `${wall.toFixed(1)} s`,
          `${(((wall - minimum) / minimum) * 100).toFixed(0)}%`,
          `${serveMb} / ${relayMb} MiB`,
        ];
      }
    });
  });
  return result;
}

const sizes = flags.nodes !== undefined ? [Number(flags.nodes)] : quick ? [200] : [1000, 5000];
const steadyTitle =
  "controller: one reconcile of a converged AdvancedDaemonSet (curl → serve → client-node → sim, three processes)";
const steadyHeader = [
  "nodes",
  "fleet created in",
  "requests / reconcile",
  "writes / reconcile",
  "p50",
  "p90",
  `resident ${restMs / 1000} s at rest, serve / relay`,
  "peak so far, serve / relay",
];
const coldTitle =
  "serverless: `serve --no-cache` started cold for one reconcile of the converged set (median, range)";
const coldHeader = ["nodes", "exec → ready", "exec → reconcile answered", "peak resident"];
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
  "peak resident, serve / relay",
];
const steady: string[][] = [];
const colds: string[][] = [];
const rollouts: string[][] = [];
for (const nodes of sizes) {
  try {
    const m = await measure(nodes, nodes === sizes[0]);
    steady.push(m.steady);
    colds.push(m.cold);
    if (m.rollout) rollouts.push(m.rollout);
  } catch (err) {
    steady.push([String(nodes), (err as Error).message, ...steadyHeader.slice(2).map(() => "")]);
  }
  // Printed after each size, so a long run shows what it has.
  table(steadyTitle, steadyHeader, steady);
  if (colds.length > 0) table(coldTitle, coldHeader, colds);
  if (rollouts.length > 0) table(rolloutTitle, rolloutHeader, rollouts);
}
