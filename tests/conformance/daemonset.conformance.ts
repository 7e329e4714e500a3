/**
 * Upstream's own DaemonSet specs (`test/e2e/apps/daemon_set.go`), run unmodified from the
 * `e2e.test` binary that `cluster/build.sh --e2e` builds from the k8s.io/kubernetes module at
 * cluster/'s version: first against the real control plane (kube-controller-manager's DaemonSet
 * controller, kwok nodes), which calibrates them, then against sim. Every spec must pass on the
 * real control plane, and every spec that does must pass on sim (ADR 0022).
 * `deno task test:conformance`; a CI stage.
 */
import { assertEquals } from "@std/assert";
import { downCluster, upCluster } from "../../cluster/control-plane.ts";
import { withSimProcess } from "../processes.ts";
import {
  focus,
  focusOn,
  isUpstreamFlake,
  parseJunit,
  type Result,
  upstreamFlake,
} from "./specs.ts";

const binary = new URL("../../cluster/bin/e2e.test", import.meta.url).pathname;

/** Runs the focused specs against `kubeconfig`; answers each spec's result by its name. */
async function runSpecs(
  kubeconfig: string,
  label: string,
  specFocus = focus,
): Promise<Map<string, Result>> {
  const reportDir = await Deno.makeTempDir({ prefix: `edgeroll-conformance-${label}-` });
  try {
    const started = performance.now();
    const run = await new Deno.Command(binary, {
      args: [
        `--kubeconfig=${kubeconfig}`,
        "--provider=skeleton",
        // sim decodes protobuf bodies of a few kinds only (ADR 0008): JSON on both targets.
        "--kube-api-content-type=application/json",
        `--ginkgo.focus=${specFocus}`,
        "--ginkgo.timeout=40m",
        "--ginkgo.no-color",
        `--report-dir=${reportDir}`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    console.error(`e2e.test on ${label}: exit ${run.code} after ${seconds} s`);
    const junit = await Deno.readTextFile(`${reportDir}/junit_01.xml`).catch(() => {
      const tail = new TextDecoder().decode(run.stdout).slice(-3000);
      throw new Error(`e2e.test on ${label} wrote no JUnit report (exit ${run.code}):\n${tail}`);
    });
    const results = parseJunit(junit);
    // Said here, before the report is removed: the spec's own words are what a fix starts from.
    for (const [spec, { failure }] of results) {
      if (failure !== undefined) {
        console.log(`failed on ${label}: ${spec}\n${failure.slice(0, 4000)}`);
      }
    }
    return results;
  } finally {
    await Deno.remove(reportDir, { recursive: true });
  }
}

Deno.test({
  name: "upstream DaemonSet e2e specs: all pass on the real control plane, and on sim",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await Deno.stat(binary).catch(() => {
      throw new Error(
        `${binary} is missing: run cluster/build.sh --e2e (deno task test:conformance)`,
      );
    });
    let onCluster: Map<string, Result>;
    const cluster = await upCluster({ nodes: 3 });
    try {
      onCluster = await runSpecs(cluster.kubeconfigPath, "cluster");
      const flaked = upstreamFlake.spec;
      if (isUpstreamFlake(flaked, onCluster.get(flaked))) {
        // The line `.ci/run` counts as a retry: the spec, the issue, the invariant's words.
        const words = onCluster.get(flaked)?.failure?.match(upstreamFlake.invariant)?.[0];
        console.log(`retried: ${flaked} (${upstreamFlake.issue}): ${words}`);
        const again = await runSpecs(cluster.kubeconfigPath, "cluster-retry", focusOn(flaked));
        onCluster.set(flaked, again.get(flaked) ?? { outcome: "failed", failure: "not run again" });
      }
    } finally {
      await downCluster();
    }
    let onSim = new Map<string, Result>();
    await withSimProcess({ nodes: 3, speed: 10 }, async (sim) => {
      onSim = await runSpecs(sim.kubeconfigPath, "sim");
    });

    const names = [...onCluster.keys()].filter((n) => onCluster.get(n)?.outcome !== "skipped")
      .sort();
    console.log(`\n| spec | cluster | sim |\n|---|---|---|`);
    for (const name of names) {
      const onSimOutcome = onSim.get(name)?.outcome ?? "not run";
      console.log(`| ${name} | ${onCluster.get(name)?.outcome} | ${onSimOutcome} |`);
    }
    assertEquals(names.length, 10, "the ten DaemonSet specs of daemon_set.go ran");
    for (const name of names) {
      await t.step(name, () => {
        assertEquals(onCluster.get(name)?.outcome, "passed", `on the real control plane: ${name}`);
        assertEquals(onSim.get(name)?.outcome, "passed", `on sim: ${name}`);
      });
    }
  },
});
