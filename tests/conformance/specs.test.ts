import { assertEquals } from "@std/assert";
import { focusOn, isUpstreamFlake, parseJunit, upstreamFlake } from "./specs.ts";

const surge = upstreamFlake.spec;
const prefix = "[It] [sig-apps] Daemon set [Serial] ";

/** A JUnit report as e2e.test writes it, one testcase per [name, body]. */
const junit = (cases: [string, string][]) =>
  `<testsuites><testsuite>${
    cases.map(([name, body]) =>
      body === "" ? `<testcase name="${name}"/>` : `<testcase name="${name}">${body}</testcase>`
    ).join("")
  }</testsuite></testsuites>`;

const failure = (text: string) => `<failure type="failed">${text}</failure>`;
/** kube-controller-manager failing the invariant on cluster/ (a cold CI, 2026-11-28), as e2e.test wrote it. */
const invariantWords =
  "[FAILED] invariants were violated during daemonset update:&#xA;An old pod with UID " +
  "5a963600-1efd-43da-8bc1-7c6a45f393aa on a node edge-1 has been running alongside a newer " +
  "version for longer than 1m0s&#xA;In [It] at: k8s.io/kubernetes@v1.33.13/test/e2e/apps/daemon_set.go:828";

Deno.test("the surge spec failing on upstream's invariant (kubernetes#121823) earns a retry; no other failure does", () => {
  const results = parseJunit(junit([
    [`${prefix}${surge} [Conformance]`, failure(invariantWords)],
    [
      `${prefix}should rollback without unnecessary restarts [Conformance]`,
      failure(invariantWords),
    ],
    [`${prefix}should run and stop simple daemon [Conformance]`, ""],
  ]));
  assertEquals(results.get(surge)?.outcome, "failed");
  assertEquals(isUpstreamFlake(surge, results.get(surge)), true);
  // Another spec with the same words, and the surge spec failing otherwise, stand as failures.
  const rollback = "should rollback without unnecessary restarts";
  assertEquals(isUpstreamFlake(rollback, results.get(rollback)), false);
  const otherwise = parseJunit(junit([
    [`${prefix}${surge} [Conformance]`, failure("timed out waiting for the condition")],
  ]));
  assertEquals(isUpstreamFlake(surge, otherwise.get(surge)), false);
  assertEquals(results.get("should run and stop simple daemon")?.outcome, "passed");
  assertEquals(isUpstreamFlake(surge, { outcome: "passed" }), false);
});

Deno.test("the retry's focus matches the surge spec's full text and no other spec", () => {
  const focus = new RegExp(focusOn(surge));
  assertEquals(focus.test(`[sig-apps] Daemon set [Serial] ${surge} [Conformance]`), true);
  assertEquals(
    focus.test("[sig-apps] Daemon set [Serial] should rollback without unnecessary restarts"),
    false,
  );
});
