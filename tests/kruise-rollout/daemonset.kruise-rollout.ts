/**
 * Kruise Rollout's own Advanced DaemonSet e2e specs (issue 37), run unmodified: the three `It`s
 * of "DaemonSet canary rollout" in openkruise/rollouts' test/e2e/rollout_test.go, from the
 * `kruise-rollout-e2e.test` binary that `cluster/build.sh --kruise-rollout` builds from the module
 * cluster/go/kruise-rollout pins. Kruise Rollout's manager runs out of cluster
 * (cluster/kruise-rollout-manager.ts) and drives the set through its mutating webhook and its
 * BatchRelease's partition and paused patches; edgeroll (`serve --kruise`, `relay --kruise`) is
 * the only controller of `daemonsets.apps.kruise.io`, whose CRD is ours (ADR 0027); no
 * kruise-manager. On the real control plane (three kwok nodes; kube-controller-manager's garbage
 * collector finishes the Rollout's foreground deletion) and, at the same time, on sim (which calls
 * the admission and conversion webhooks as kube-apiserver does). Each spec runs alone (Ginkgo v1
 * writes no report of its own here), in the order the binary lists them; every spec must pass on
 * both. A spec that fails where the manager's log shows Kruise Rollout's own race (ADR 0051) is run
 * once more, printed as `retried:` and counted by CI. `deno task test:kruise-rollout`; a CI stage.
 */
import { assertEquals } from "@std/assert";
import { downCluster, upCluster } from "../../cluster/control-plane.ts";
import {
  kruiseRolloutConfigDir,
  startKruiseRolloutManager,
} from "../../cluster/kruise-rollout-manager.ts";
import { runLogged, withSimProcess } from "../processes.ts";
import { fileSize, logSince } from "../../cluster/processes.ts";
import { withKruiseMode } from "../kruise/mode.ts";
import {
  batchReleaseRace,
  daemonSetFocus,
  dryRunSpecs,
  focusOn,
  type Outcome,
  runOutcome,
  type Spec,
} from "./specs.ts";

const repo = new URL("../../", import.meta.url).pathname;
const binary = `${repo}cluster/bin/kruise-rollout-e2e.test`;
/** The binary reads its fixtures from ./test_data: it runs where the build put them. */
const testDir = `${kruiseRolloutConfigDir()}/test/e2e`;
/** The last run's output per spec and target, and the managers' logs, kept for a failure. */
const runDir = `${repo}.cache/kruise-rollout-e2e`;

/**
 * How long a pod takes to become Ready on both targets, as the fixture's fluentd takes on a node:
 * longer than the window Kruise Rollout's own race opens (about 4.5 s, ADR 0051), as on the kind
 * clusters its CI runs on. kwok's and sim's instant pods would let a controller replace a second
 * pod within that window, which no kubelet does.
 */
const podStartSeconds = 7;

/** Ginkgo v1's flags (the binary's), and its deprecation notice silenced. */
function ginkgoArgs(focus: string, dryRun = false): string[] {
  return [
    `-ginkgo.focus=${focus}`,
    ...(dryRun ? ["-ginkgo.dryRun"] : []),
    "-ginkgo.v",
    "-ginkgo.noColor",
    // Its helpers poll 5 minutes at most before a spec fails.
    "-test.timeout=40m",
  ];
}
const ginkgoEnv = { ACK_GINKGO_DEPRECATIONS: "1.16.5" };

/** The specs the focus selects, from a dry run: fails if the binary is missing or lists none. */
async function listSpecs(): Promise<Spec[]> {
  await Deno.stat(binary).catch(() => {
    throw new Error(`${binary} is missing: run cluster/build.sh --kruise-rollout`);
  });
  const run = await new Deno.Command(binary, {
    args: ginkgoArgs(daemonSetFocus, true),
    env: ginkgoEnv,
    cwd: testDir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const output = new TextDecoder().decode(run.stdout);
  const specs = dryRunSpecs(output);
  if (run.code !== 0 || specs.length === 0) {
    throw new Error(`the dry run of ${binary} listed no spec (exit ${run.code}):\n${output}`);
  }
  return specs;
}

/** Runs one spec against `kubeconfig`, its output kept in `runDir/label-N.log`. */
async function runSpec(kubeconfig: string, label: string, spec: Spec, n: string): Promise<Outcome> {
  const logPath = `${runDir}/${label}-${n}.log`;
  console.error(`kruise-rollout-e2e.test on ${label}: ${spec.it}; output in ${logPath}`);
  const status = await runLogged(
    binary,
    {
      args: ginkgoArgs(focusOn(spec)),
      env: { ...ginkgoEnv, KUBECONFIG: kubeconfig },
      cwd: testDir,
    },
    logPath,
    label,
  );
  return runOutcome(status.code, await Deno.readTextFile(logPath));
}

/** edgeroll in Kruise mode and Kruise Rollout's manager against `kubeconfig`, each spec run. */
async function runAgainst(kubeconfig: string, label: string, specs: Spec[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  await withKruiseMode(kubeconfig, { serveArgs: ["--tick=5s"] }, async () => {
    // After our CRD: the manager watches a workload kind only if discovery finds it at its start.
    const workDir = await Deno.makeTempDir({ prefix: `edgeroll-kruise-rollout-${label}-` });
    const managerLog = `${runDir}/${label}-manager.log`;
    await Deno.remove(managerLog).catch(() => {});
    const manager = await startKruiseRolloutManager(kubeconfig, { logPath: managerLog, workDir });
    try {
      for (const [i, spec] of specs.entries()) {
        const logStart = await fileSize(managerLog);
        const outcome = await runSpec(kubeconfig, label, spec, String(i + 1));
        // Kruise Rollout's own race, seen in its log during this spec: run again, once, said.
        const race = outcome.passed
          ? undefined
          : batchReleaseRace(await logSince(managerLog, logStart));
        if (race === undefined) {
          outcomes.push(outcome);
          continue;
        }
        console.log(`retried: ${spec.it} on ${label} (ADR 0051, Kruise Rollout's race): ${race}`);
        outcomes.push(await runSpec(kubeconfig, label, spec, `${i + 1}-retry`));
      }
    } finally {
      await manager.stop();
      await Deno.remove(workDir, { recursive: true });
    }
  });
  return outcomes;
}

Deno.test({
  name: "Kruise Rollout's Advanced DaemonSet e2e specs pass against edgeroll serve --kruise, " +
    "on cluster/ and on sim",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const specs = await listSpecs();
    assertEquals(specs.length, 3, `the "${daemonSetFocus}" specs: ${specs.map((s) => s.it)}`);
    await Deno.mkdir(runDir, { recursive: true });
    // Side by side, as the kruise-e2e stage runs: the specs mostly wait on their polls. Each half
    // stops what it started before either's failure is thrown. EDGEROLL_KRUISE_ROLLOUT_ONLY=sim
    // (or cluster) runs one half while a fix is written; the test then fails, naming the other.
    const only = Deno.env.get("EDGEROLL_KRUISE_ROLLOUT_ONLY");
    const skipped = (): Promise<Outcome[]> =>
      Promise.resolve(specs.map(() => ({
        passed: false,
        failure: `not run: EDGEROLL_KRUISE_ROLLOUT_ONLY=${only}`,
      })));
    const [clusterRun, simRun] = await Promise.allSettled([
      only === "sim" ? skipped() : (async () => {
        const cluster = await upCluster({ nodes: 3, podReadyDelayMs: podStartSeconds * 1000 });
        try {
          return await runAgainst(cluster.kubeconfigPath, "cluster", specs);
        } finally {
          await downCluster();
        }
      })(),
      only === "cluster" ? skipped() : (async () => {
        let outcomes: Outcome[] = [];
        await withSimProcess({ nodes: 3, speed: 1, startSeconds: podStartSeconds }, async (sim) => {
          outcomes = await runAgainst(sim.kubeconfigPath, "sim", specs);
        });
        return outcomes;
      })(),
    ]);
    if (clusterRun.status === "rejected") throw clusterRun.reason;
    if (simRun.status === "rejected") throw simRun.reason;

    console.log(`\n| spec | cluster | sim |\n|---|---|---|`);
    const state = (o: Outcome) => o.passed ? "passed" : "failed";
    for (const [i, spec] of specs.entries()) {
      console.log(`| ${spec.it} | ${state(clusterRun.value[i])} | ${state(simRun.value[i])} |`);
    }
    console.log(`\noutput per spec and the managers' logs: ${runDir}`);
    for (const [i, spec] of specs.entries()) {
      await t.step(spec.it, () => {
        for (
          const [label, outcome] of [["cluster", clusterRun.value[i]], ["sim", simRun.value[i]]]
        ) {
          const o = outcome as Outcome;
          if (!o.passed) throw new Error(`on ${label}:\n${o.failure.slice(0, 4000)}`);
        }
      });
    }
  },
});
