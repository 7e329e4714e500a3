import { assertEquals, assertStringIncludes, assertThrows } from "@std/assert";
import { UsageError } from "../lib/command.ts";
import { plan } from "../engine/plan.ts";
import * as f from "../engine/testdata/fleet.ts";
import type { Snapshot } from "../api/plan.ts";
import { isComplete, parseSetArg, renderStatus } from "./status-command.ts";
import { readChart, RolloutHistory } from "./rollout-chart.ts";

const ref = { kind: "advanceddaemonsets" as const, namespace: "edge", name: "agent" };

/** `count` lines of `text`, from the first that starts with `heading`. */
function section(text: string, heading: string, count: number): string[] {
  const lines = text.split("\n");
  const from = lines.findIndex((l) => l.startsWith(heading));
  return lines.slice(from, from + count);
}

function fleet(nodes: number): f.Cluster {
  return f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({}) as Snapshot["set"],
    pods: [],
    nodes: f.nodes(nodes),
    revisions: [],
  });
}

Deno.test("status of a fresh set: empty bar, the pods it waits for, the next actions", () => {
  const c = fleet(4);
  const planned = plan(c.snapshot, f.t0);
  const text = renderStatus(ref, c.snapshot, planned);
  assertStringIncludes(text, "advanceddaemonsets/edge/agent  generation 1");
  assertStringIncludes(text, `[${"-".repeat(30)}] 0/4 updated`);
  assertStringIncludes(text, "budget: ");
  assertStringIncludes(text, "next reconcile would take");
  assertEquals(isComplete(planned), false);
});

Deno.test("status of a converged set: full bar, Complete, nothing waited for", () => {
  let c = fleet(3);
  let now = f.t0;
  for (let i = 0; i < 10; i++, now += 1000) c = f.reconciled(c, now);
  const planned = plan(c.snapshot, now);
  const text = renderStatus(ref, c.snapshot, planned);
  assertStringIncludes(text, `[${"#".repeat(30)}] 3/3 updated, 3 available, 0 unavailable`);
  assertStringIncludes(text, "Complete");
  assertEquals(text.includes("waiting for"), false);
  assertEquals(isComplete(planned), true);
});

Deno.test("parseSetArg takes ns/name or kind/ns/name, the kind as kubectl names it, and nothing else", () => {
  assertEquals(parseSetArg("edge/agent", "advanceddaemonsets"), ref);
  assertEquals(parseSetArg("daemonsets/kube-system/yurt", "advanceddaemonsets").kind, "daemonsets");
  assertEquals(parseSetArg("ds/kube-system/yurt", "advanceddaemonsets").kind, "daemonsets");
  assertEquals(parseSetArg("ads/edge/agent", "daemonsets"), ref);
  for (const kruise of ["daemonset.apps.kruise.io", "daemon"]) {
    assertEquals(
      parseSetArg(`${kruise}/edge/agent`, "advanceddaemonsets").kind,
      "daemonsets.apps.kruise.io",
    );
  }
  for (const bad of [undefined, "agent", "pods/edge/x", "constructor/edge/x", "a/b/c/d", "edge/"]) {
    assertThrows(() => parseSetArg(bad, "advanceddaemonsets"), UsageError);
  }
});

Deno.test("status --watch draws the rollout's course under the plan, per domain, from what it watched", () => {
  const zone = "topology.kubernetes.io/zone";
  let { c, now } = f.settledThenV2(
    f.cluster(f.plannedSnapshot(
      { domainLabel: zone, domainMaxUnavailable: 1, steps: [{ nodes: "100%" }] },
      { maxUnavailable: 2 },
      ["a-1", "a-2", "b-1", "b-2"].map((n) => f.node(n, { labels: { [zone]: `zone-${n[0]}` } })),
    )),
    f.t0,
  );
  const history = new RolloutHistory();
  for (let i = 0; i < 6; i++, now += 1000) {
    history.add(now, readChart(c.snapshot, plan(c.snapshot, now)));
    c = f.reconciled(c, now);
  }
  const planned = plan(c.snapshot, now);
  history.add(now, readChart(c.snapshot, planned));
  const text = renderStatus(ref, c.snapshot, planned, history);
  const course = text.split("\n").filter((l) => l.includes("updated ▁"));
  // Both zones climb to every node updated, each unavailable at most its budget of 1 at a time.
  assertEquals(course.length, 2, text);
  assertStringIncludes(course[0], "zone-a");
  assertStringIncludes(course[0], "2/2  unavailable");
  assertStringIncludes(course[0], "0 of 1");
  assertStringIncludes(text, "over time:");
  assertEquals(renderStatus(ref, c.snapshot, planned).includes("over time:"), false);
});

Deno.test("status of a plan stopped by a domain over its failure budget names the reason and the domain", () => {
  const zone = "topology.kubernetes.io/zone";
  let { c, now } = f.settledThenV2(
    f.cluster(f.plannedSnapshot(
      { domainLabel: zone, maxConcurrentDomains: 2, steps: [{ nodes: "100%" }] },
      { maxUnavailable: 4, failurePolicy: { maxFailed: "40%" } },
      ["a-1", "a-2", "b-1", "b-2", "c-1"].map((n) =>
        f.node(n, { labels: { [zone]: `zone-${n[0]}` } })
      ),
    )),
    f.t0,
  );
  // Both of zone-a's new pods fail: within the set's 2 of 4, more than zone-a's 1 of 2.
  let planned = plan(c.snapshot, now);
  for (let i = 0; i < 6 && !planned.status.rolloutStop; i++, now += 1000) {
    c = f.kubelet(f.apply(c, planned, now), now, new Set(["a-1", "a-2"]));
    planned = plan(c.snapshot, now);
  }
  assertEquals(section(renderStatus(ref, c.snapshot, planned), "plan:", 4), [
    "plan: step 1 of 1 (5 nodes), Stopped (FailureBudgetExceeded in zone-a)",
    "  zone-a  Stopped  0/2 updated",
    "  zone-b  Done     2/2 updated",
    "  zone-c  Pending  0/1 updated",
  ]);
});

Deno.test("status shows the maintenance windows the outdated nodes wait for", () => {
  const windowed = f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: {
          maintenance: {
            timeZone: "Europe/Berlin",
            windows: [{ start: "01:00", duration: "2h" }],
          },
        },
      },
    }) as Snapshot["set"],
    pods: [],
    nodes: f.nodes(3),
    revisions: [],
  });
  const { c } = f.settledThenV2(windowed, f.t0 + 12 * 3600_000);
  const now = f.t0 + 12 * 3600_000 + 10_000;
  const text = renderStatus(ref, c.snapshot, plan(c.snapshot, now));
  assertStringIncludes(text, "maintenance: closed, next opening 2026-01-02T00:00:00Z");
  assertStringIncludes(
    text,
    "  Europe/Berlin  Closed      3 nodes outdated  opens 2026-01-02T00:00:00Z",
  );
});

Deno.test("status of a fleet in three time zones, each waiting for its own night (the README's)", () => {
  const sites = {
    "ap-northeast": "Asia/Tokyo",
    "eu-central": "Europe/Berlin",
    "us-east": "America/New_York",
  };
  const nodes = Object.entries(sites).flatMap(([region, zone]) =>
    [1, 2].map((i) =>
      f.node(`${region}-${i}`, {
        labels: { "topology.kubernetes.io/region": region, "edgeroll.dev/time-zone": zone },
      })
    )
  );
  const fleet = f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: {
          maxUnavailable: 2,
          plan: {
            domainLabel: "topology.kubernetes.io/region",
            maxConcurrentDomains: 3,
            steps: [{ nodes: "100%" }],
          },
          maintenance: {
            timeZoneLabel: "edgeroll.dev/time-zone",
            windows: [
              { days: ["Mon", "Tue", "Wed", "Thu", "Fri"], start: "01:00", end: "04:00" },
              { days: ["Sat"], start: "02:00", duration: "2h", domains: ["ap-northeast"] },
            ],
            blackoutDates: ["2026-12-24", "2026-12-31"],
            cutoffMinutes: 20,
          },
        },
      },
    }) as Snapshot["set"],
    pods: [],
    nodes,
    revisions: [],
  });
  // Sunday 2026-11-29, 14:00 UTC: every site's window is closed.
  const sunday = Date.parse("2026-11-29T14:00:00Z");
  const { c, now } = f.settledThenV2(fleet, sunday);
  const text = renderStatus(ref, c.snapshot, plan(c.snapshot, now));
  assertEquals(section(text, "maintenance:", 4), [
    "maintenance: closed, next opening 2026-11-29T16:00:00Z",
    "  ap-northeast (Asia/Tokyo)   Closed      2 nodes outdated  opens 2026-11-29T16:00:00Z",
    "  eu-central (Europe/Berlin)  Closed      2 nodes outdated  opens 2026-11-30T00:00:00Z",
    "  us-east (America/New_York)  Closed      2 nodes outdated  opens 2026-11-30T06:00:00Z",
  ]);
});

Deno.test("status of a fleet whose zone-b fails its error-ratio check after its update (the README's)", () => {
  const zone = "topology.kubernetes.io/zone";
  const nodes = ["zone-a", "zone-b", "zone-c"].flatMap((z) =>
    [1, 2].map((i) => f.node(`${z.slice(5)}-${i}`, { labels: { [zone]: z } }))
  );
  const snapshot = f.plannedSnapshot(
    {
      domainLabel: zone,
      steps: [{ domains: 1, checks: ["error-ratio"] }, { nodes: "100%" }],
    },
    {
      maxUnavailable: 1,
      analysis: {
        checks: [{
          name: "error-ratio",
          prometheus: {
            address: "http://prom.test:9090",
            query: 'sum(rate(agent_errors_total{zone="{{domain}}"}[2m]))' +
              ' / sum(rate(agent_requests_total{zone="{{domain}}"}[2m]))',
          },
          successCondition: { max: 0.05 },
          intervalSeconds: 30,
          count: 3,
        }],
        background: ["error-ratio"],
        onFailure: "Rollback",
      },
    },
    nodes,
  );
  const ratio = (values: Record<string, number>): f.MeasureSource => (domain) => ({
    values: [values[domain ?? ""] ?? 0.01],
  });
  let c = f.cluster(snapshot);
  let now = Date.parse("2026-11-29T14:00:00Z");
  for (let i = 0; i < 30; i++, now += 15_000) c = f.measuredStep(c, now, ratio({}))[1];
  c = f.withTemplate(c, "agent:v2", 2);
  let planned = plan(c.snapshot, now);
  for (let i = 0; i < 60; i++, now += 15_000) {
    [planned, c] = f.measuredStep(c, now, ratio({ "zone-b": 0.31 }));
  }
  const lines = renderStatus(ref, c.snapshot, planned).split("\n");
  const from = lines.findIndex((l) => l.startsWith("plan:"));
  const to = lines.findIndex((l) => l.startsWith("conditions:"));
  assertEquals(lines.slice(from, to + 2), [
    "plan: step 2 of 2 (6 nodes), Stopped (AnalysisFailed)",
    "  zone-a  Done        2/2 updated",
    "  zone-b  RolledBack  0/2 updated",
    "  zone-c  Done        2/2 updated",
    "analysis:",
    "  error-ratio in zone-a: Passed, 3 passed, 0 failed, 0 inconclusive; last 0.01 at 2026-11-29T14:08:45Z",
    "  error-ratio in zone-b: Failed, 0 passed, 1 failed, 0 inconclusive; last 0.31 at 2026-11-29T14:10:15Z (0.31 fails)",
    "  error-ratio in zone-c: Passed, 3 passed, 0 failed, 0 inconclusive; last 0.01 at 2026-11-29T14:12:15Z",
    "conditions: RolloutStopped (AnalysisFailed)",
    "  RolloutStopped: failed checks: error-ratio in zone-b; their domains are updated no further and no later step starts until a new template or a resume",
  ]);
});
