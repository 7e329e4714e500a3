/**
 * Reading upstream's DaemonSet specs' JUnit report, and the one retry a known upstream flake
 * earns (ADR 0022); pure, so its rules are tested in `deno task test` (specs.test.ts).
 */

/** The specs of `test/e2e/apps/daemon_set.go`, as ginkgo focuses them. */
export const focus = "\\[sig-apps\\] Daemon set";

export type Outcome = "passed" | "failed" | "skipped";

/** A spec's outcome, with its failure's own words when it failed. */
export interface Result {
  outcome: Outcome;
  failure?: string;
}

/**
 * The one spec that flakes against upstream's own controller, and the invariant its flake breaks
 * (kubernetes/kubernetes#121823, #107174: kube-controller-manager lets an old pod outlive a newer
 * one by more than a minute). Failing with exactly that on the real control plane, it is run
 * again once, alone, and the retry printed for `.ci/run` to count (ADR 0022). On sim, any
 * failure stands.
 */
export const upstreamFlake = {
  spec: "should surge pods onto nodes when spec was updated and update strategy is RollingUpdate",
  issue: "kubernetes/kubernetes#121823",
  // daemon_set.go's words at v1.33.13 (`on a node` came after the issue quoted them).
  invariant:
    /An old pod with UID \S+ (on a node \S+ )?has been running alongside a newer version for longer than \S+/,
};

/** Whether a cluster result is upstream's known flake, which earns one retry. */
export function isUpstreamFlake(spec: string, result: Result | undefined): boolean {
  return spec === upstreamFlake.spec && result?.outcome === "failed" &&
    upstreamFlake.invariant.test(result.failure ?? "");
}

/** A ginkgo focus matching one spec's name and nothing else. */
export const focusOn = (spec: string) =>
  `${focus} .*${spec.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`;

const unescape = (text: string) =>
  text.replaceAll("&#34;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** `[It] [sig-apps] Daemon set [Serial] should … [Conformance]` → `should …`. */
function specName(testcase: string): string {
  return testcase.replace(/^\[It\] \[sig-apps\] Daemon set \[Serial\] /, "")
    .replace(/ \[Conformance\]$/, "");
}

export function parseJunit(xml: string): Map<string, Result> {
  const outcomes = new Map<string, Result>();
  for (const m of xml.matchAll(/<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = unescape(m[1]);
    if (!name.includes("[sig-apps] Daemon set")) continue;
    const body = m[3] ?? "";
    const failure = /<(failure|error)\b[^>]*>([\s\S]*?)<\/\1>/.exec(body);
    const words = failure ? unescape(failure[2]) : undefined;
    const outcome: Outcome = /<(failure|error)\b/.test(body)
      ? "failed"
      : /<skipped\b/.test(body)
      ? "skipped"
      : "passed";
    outcomes.set(specName(name), { outcome, ...(words === undefined ? {} : { failure: words }) });
  }
  return outcomes;
}
