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

const binary = new URL("../../cluster/bin/e2e.test", import.meta.url).pathname;
const focus = "\\[sig-apps\\] Daemon set";

type Outcome = "passed" | "failed" | "skipped";

/** Runs the focused specs against `kubeconfig`; answers each spec's outcome by its name. */
async function runSpecs(kubeconfig: string, label: string): Promise<Map<string, Outcome>> {
  const reportDir = await Deno.makeTempDir({ prefix: `edgeroll-conformance-${label}-` });
  try {
    const started = performance.now();
    const run = await new Deno.Command(binary, {
      args: [
        `--kubeconfig=${kubeconfig}`,
        "--provider=skeleton",
        // sim decodes protobuf bodies of a few kinds only (ADR 0008): JSON on both targets.
        "--kube-api-content-type=application/json",
        `--ginkgo.focus=${focus}`,
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
    return parseJunit(junit);
  } finally {
    await Deno.remove(reportDir, { recursive: true });
  }
}

const unescape = (text: string) =>
  text.replaceAll("&#34;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** `[It] [sig-apps] Daemon set [Serial] should … [Conformance]` → `should …`. */
function specName(testcase: string): string {
  return testcase.replace(/^\[It\] \[sig-apps\] Daemon set \[Serial\] /, "")
    .replace(/ \[Conformance\]$/, "");
}

function parseJunit(xml: string): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  for (const m of xml.matchAll(/<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = unescape(m[1]);
    if (!name.includes("[sig-apps] Daemon set")) continue;
    const body = m[3] ?? "";
    const failure = /<(failure|error)\b[^>]*>([\s\S]*?)<\/\1>/.exec(body);
    // Said here, before the report is removed: the spec's own words are what a fix starts from.
    if (failure) console.log(`failed: ${specName(name)}\n${unescape(failure[2]).slice(0, 4000)}`);
    const outcome: Outcome = /<(failure|error)\b/.test(body)
      ? "failed"
      : /<skipped\b/.test(body)
      ? "skipped"
      : "passed";
    outcomes.set(specName(name), outcome);
  }
  return outcomes;
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
    let onCluster: Map<string, Outcome>;
    const cluster = await upCluster({ nodes: 3 });
    try {
      onCluster = await runSpecs(cluster.kubeconfigPath, "cluster");
    } finally {
      await downCluster();
    }
    let onSim = new Map<string, Outcome>();
    await withSimProcess({ nodes: 3, speed: 10 }, async (sim) => {
      onSim = await runSpecs(sim.kubeconfigPath, "sim");
    });

    const names = [...onCluster.keys()].filter((n) => onCluster.get(n) !== "skipped").sort();
    console.log(`\n| spec | cluster | sim |\n|---|---|---|`);
    for (const name of names) {
      console.log(`| ${name} | ${onCluster.get(name)} | ${onSim.get(name) ?? "not run"} |`);
    }
    assertEquals(names.length, 10, "the ten DaemonSet specs of daemon_set.go ran");
    for (const name of names) {
      await t.step(name, () => {
        assertEquals(onCluster.get(name), "passed", `on the real control plane: ${name}`);
        assertEquals(onSim.get(name), "passed", `on sim: ${name}`);
      });
    }
  },
});
