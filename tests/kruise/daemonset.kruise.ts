/**
 * OpenKruise's own Advanced DaemonSet e2e specs, run unmodified (issue #15): the seven `It`s of
 * `test/e2e/apps/v1alpha1/daemonset.go` and the same seven of `test/e2e/apps/v1beta1/daemonset.go`,
 * from the `kruise-e2e.test` binary that `cluster/build.sh --kruise` builds from the Kruise module
 * cluster/go/kruise-e2e pins. They run on the real control plane (three kwok nodes) and, at the
 * same time, on sim (which calls the conversion webhook as kube-apiserver does, ADR 0028), with edgeroll
 * (`serve --kruise`, and `relay --kruise`) as the only controller of `daemonsets.apps.kruise.io`,
 * whose CRD is ours (ADR 0027): the one `deno task crd` writes to manifests/crd/kruise, with the
 * conversion webhook pointed at the controller on loopback over HTTPS and the controller's own CA
 * as `caBundle`, as the API server requires. Both files give the same spec texts, so a spec is
 * told apart by its source file in Ginkgo's JSON report. Every spec must pass but those `excluded`
 * names, each with its reason and ADR, on both. `deno task test:kruise`; a CI stage once they
 * pass (issue 15).
 */
import { assert, assertEquals } from "@std/assert";
import { downCluster, upCluster } from "../../cluster/control-plane.ts";
import { runLogged, withSimProcess } from "../processes.ts";
import { withKruiseMode } from "./mode.ts";
import {
  daemonSetOutcomes,
  type GinkgoReport,
  type SpecOutcome,
  specsPerVersion,
  stepName,
  trimmed,
} from "./report.ts";

const repo = new URL("../../", import.meta.url).pathname;
const binary = `${repo}cluster/bin/kruise-e2e.test`;
/** The last run's JSON report and output, kept for whoever reads a failure. */
const runDir = `${repo}.cache/kruise-e2e`;

/**
 * The flags of kruise-e2e.test (Kruise's test/e2e/e2e_test.go and framework/common/
 * test_context.go). It takes no --kubeconfig flag: the framework reads $KUBECONFIG.
 */
function ginkgoArgs(reportPath: string): string[] {
  return [
    // The two Describe("DaemonSet", Label("DaemonSet", "workload")) and nothing else.
    "--ginkgo.label-filter=DaemonSet",
    "--ginkgo.focus-file=test/e2e/apps/v1(alpha|beta)1/daemonset\\.go$",
    `--ginkgo.json-report=${reportPath}`,
    // sim decodes protobuf bodies of a few kinds only (ADR 0008): JSON on both targets.
    "--kube-api-content-type=application/json",
    // Each spec polls 5 minutes at most before it fails: 14 failing specs stay under 2 hours.
    "--ginkgo.timeout=2h",
    "--ginkgo.v",
    "--ginkgo.no-color",
  ];
}

/** A spec skipped here, and why; keyed by its step name, e.g. `v1beta1: should …`. */
interface Exclusion {
  reason: string;
  /** The decision record that argues it, e.g. `docs/decisions/0027-….md`. */
  adr: string;
}

/** Empty: every spec is expected to pass. */
const excluded: Record<string, Exclusion> = {};

/** Fails, naming what is missing, before minutes go into a control plane. */
async function preflight(): Promise<void> {
  await Deno.stat(binary).catch(() => {
    throw new Error(`${binary} is missing: run cluster/build.sh --kruise (deno task test:kruise)`);
  });
}

/** Runs the 14 specs against `kubeconfig`, the report and output kept in `runDir/label.*`. */
async function runSpecs(kubeconfig: string, label: string): Promise<SpecOutcome[]> {
  await Deno.mkdir(runDir, { recursive: true });
  const reportPath = `${runDir}/${label}.json`;
  const logPath = `${runDir}/${label}.log`;
  await Deno.remove(reportPath).catch(() => {});
  console.error(`kruise-e2e.test on ${label}: running; its output goes to ${logPath}`);
  const status = await runLogged(
    binary,
    {
      args: ginkgoArgs(reportPath),
      env: { KUBECONFIG: kubeconfig },
      cwd: runDir,
    },
    logPath,
    label,
  );
  const json = await Deno.readTextFile(reportPath).catch(async () => {
    const tail = (await Deno.readTextFile(logPath)).slice(-3000);
    throw new Error(`kruise-e2e.test wrote no JSON report (exit ${status.code}):\n${tail}`);
  });
  const reports = JSON.parse(json) as GinkgoReport[];
  for (const reason of reports.flatMap((r) => r.SpecialSuiteFailureReasons ?? [])) {
    console.error(`kruise-e2e.test: the suite failed: ${reason}`);
  }
  return daemonSetOutcomes(reports);
}

/** edgeroll in Kruise mode against `kubeconfig`, and the 14 specs run. */
async function runAgainst(kubeconfig: string, label: string): Promise<SpecOutcome[]> {
  let outcomes: SpecOutcome[] = [];
  await withKruiseMode(kubeconfig, { serveArgs: ["--tick=5s"] }, async () => {
    outcomes = await runSpecs(kubeconfig, label);
  });
  return outcomes;
}

Deno.test({
  name:
    "Kruise's Advanced DaemonSet e2e specs pass against edgeroll serve --kruise, on cluster/ and on sim",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await preflight();
    // The two targets side by side: the specs mostly wait on their polls, so two cores hold both
    // (half the stage's time). Each half stops what it started before either's failure is thrown.
    const [clusterRun, simRun] = await Promise.allSettled([
      (async () => {
        const cluster = await upCluster({ nodes: 3 });
        try {
          return await runAgainst(cluster.kubeconfigPath, "cluster");
        } finally {
          await downCluster();
        }
      })(),
      (async () => {
        let outcomes: SpecOutcome[] = [];
        await withSimProcess({ nodes: 3, speed: 10 }, async (sim) => {
          outcomes = await runAgainst(sim.kubeconfigPath, "sim");
        });
        return outcomes;
      })(),
    ]);
    if (clusterRun.status === "rejected") throw clusterRun.reason;
    if (simRun.status === "rejected") throw simRun.reason;
    const [onCluster, onSim] = [clusterRun.value, simRun.value];

    const simState = new Map(onSim.map((o) => [stepName(o), o.state]));
    console.log(`\n| spec | API version | cluster | sim |\n|---|---|---|---|`);
    for (const o of onCluster) {
      const note = excluded[stepName(o)] ? ` (excluded: ${excluded[stepName(o)].adr})` : "";
      console.log(
        `| ${o.spec} | ${o.apiVersion} | ${o.state}${note} | ${
          simState.get(stepName(o)) ?? "not run"
        } |`,
      );
    }
    for (const [label, outcomes] of [["cluster", onCluster], ["sim", onSim]] as const) {
      for (const o of outcomes.filter((o) => o.state !== "passed" && o.failure)) {
        console.log(`\n${label}, ${stepName(o)}: ${o.state}\n${trimmed(o.failure!)}`);
      }
    }
    console.log(`\nreports and output: ${runDir}/{cluster,sim}.{json,log}`);

    for (const [label, outcomes] of [["cluster", onCluster], ["sim", onSim]] as const) {
      for (const version of ["v1alpha1", "v1beta1"]) {
        const specs = outcomes.filter((o) => o.apiVersion === version).map((o) => o.spec);
        assertEquals(
          specs.length,
          specsPerVersion,
          `the ${version} DaemonSet specs ran on ${label}`,
        );
        assertEquals(new Set(specs).size, specs.length, `the ${version} spec texts are distinct`);
      }
    }
    for (const name of Object.keys(excluded)) {
      assert(onCluster.some((o) => stepName(o) === name), `excluded names no spec: ${name}`);
    }
    for (const o of onCluster) {
      await t.step({
        name: stepName(o),
        ignore: stepName(o) in excluded,
        fn: () => {
          assertEquals(o.state, "passed", o.failure && trimmed(o.failure, 8, 800));
          const sim = onSim.find((s) => stepName(s) === stepName(o));
          assertEquals(sim?.state, "passed", sim?.failure && trimmed(sim.failure, 8, 800));
        },
      });
    }
  },
});
