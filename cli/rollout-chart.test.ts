import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import type { Snapshot } from "../api/plan.ts";
import { plan } from "../engine/plan.ts";
import * as f from "../engine/testdata/fleet.ts";
import { chartLines, chartSvg, readChart, RolloutHistory, sparkline } from "./rollout-chart.ts";

const zoneLabel = "topology.kubernetes.io/zone";

/** Zones a (2 nodes) and b (3), a plan over them with one node of each zone at a time. */
function zonedSet(): Snapshot {
  return f.plannedSnapshot(
    {
      domainLabel: zoneLabel,
      firstDomains: ["b"],
      maxConcurrentDomains: 2,
      domainMaxUnavailable: "50%",
      steps: [{ nodes: "100%" }],
    },
    { maxUnavailable: 2 },
    ["a-1", "a-2", "b-1", "b-2", "b-3"].map((n) => f.node(n, { labels: { [zoneLabel]: n[0] } })),
  );
}

/** The set settled on v1, moved to v2, and `rounds` reconciles with their kubelets after. */
function rolling(rounds: number) {
  let { c, now } = f.settledThenV2(f.cluster(zonedSet()), f.t0);
  for (let i = 0; i < rounds; i++, now += 1000) c = f.reconciled(c, now);
  return { snapshot: c.snapshot, planned: plan(c.snapshot, now), now };
}

Deno.test("the chart counts each domain of the plan, in its order, with its own budget", () => {
  const { snapshot, planned } = rolling(1);
  const reading = readChart(snapshot, planned);
  // b first (firstDomains); 50% of b's 3 nodes is 2, of a's 2 is 1, both within the set's 2.
  assertEquals(reading.domains, [
    { name: "b", nodes: 3, budget: 2 },
    { name: "a", nodes: 2, budget: 1 },
  ]);
  const counted = reading.domains.map((d) => reading.counts.get(d.name));
  // One reconcile in: b's two old pods deleted, their replacements not yet available; the set's
  // maxUnavailable of 2 is all b's, so a waits.
  assertEquals(counted, [{ updated: 0, unavailable: 2 }, { updated: 0, unavailable: 0 }]);
  const done = rolling(8);
  const finished = readChart(done.snapshot, done.planned);
  assertEquals(finished.counts.get("b"), { updated: 3, unavailable: 0 });
  assertEquals(finished.counts.get("a"), { updated: 2, unavailable: 0 });
});

Deno.test("without a plan the chart has one domain, the set, under its maxUnavailable", () => {
  const s = zonedSet();
  const rollingUpdate = (s.set.spec as { updateStrategy: { rollingUpdate: { plan?: unknown } } })
    .updateStrategy.rollingUpdate;
  delete rollingUpdate.plan;
  const reading = readChart(s, plan(s, f.t0));
  assertEquals(reading.domains, [{ name: "(all nodes)", nodes: 5, budget: 2 }]);
});

Deno.test("a history keeps at most its limit per domain and starts again with a new revision", () => {
  const history = new RolloutHistory(3);
  const reading = (revision: string, updated: number) => ({
    revision,
    domains: [{ name: "a", nodes: 4, budget: 1 }],
    counts: new Map([["a", { updated, unavailable: 1 }]]),
  });
  for (let i = 0; i < 5; i++) history.add(i * 1000, reading("r1", i));
  assertEquals(history.charts()[0].samples.map((s) => s.updated), [2, 3, 4]);
  history.add(9000, reading("r2", 0));
  assertEquals(history.charts()[0].samples.map((s) => s.at), [9000]);
});

Deno.test("sparklines and the SVG chart draw the samples against the domain's nodes and budget", () => {
  assertEquals(sparkline([0, 1, 2, 4], 4), "▁▃▅█");
  assertEquals(sparkline([3], 0), "▁");
  const history = new RolloutHistory();
  const domain = { name: "zone-<a>", nodes: 4, budget: 1 };
  history.add(0, {
    domains: [domain],
    counts: new Map([[domain.name, { updated: 0, unavailable: 1 }]]),
  });
  history.add(5000, {
    domains: [domain],
    counts: new Map([[domain.name, { updated: 4, unavailable: 0 }]]),
  });
  const [line] = chartLines(history);
  assertStringIncludes(line, "updated ▁█ 4/4");
  assertStringIncludes(line, "unavailable █▁ 0 of 1");
  const svg = chartSvg(domain, history.charts()[0].samples);
  // Updated climbs from the bottom (y 63) to the top (y 1) across the width; budget at 1 of 4.
  assertStringIncludes(svg, '<path class="updated" d="M0.0 63.0 L240.0 1.0"/>');
  assertStringIncludes(svg, '<path class="budget" d="M0 47.5 H240"/>');
  assertStringIncludes(
    svg,
    'aria-label="zone-&#60;a&#62;: 4/4 updated, 0 unavailable of a budget of 1"',
  );
  assert(!svg.includes("<a>"), "a domain's name is escaped");
});
