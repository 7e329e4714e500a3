import { assertEquals } from "@std/assert";
import type { NodeReport, Plan, Snapshot } from "../../api/plan.ts";
import { changedTiles, setView, tileState, zoneLabel } from "./tiles.ts";

const report = (over: Partial<NodeReport>): NodeReport => ({
  node: "n",
  revision: "new",
  ready: true,
  available: true,
  leaving: false,
  cutOff: false,
  inScope: true,
  ...over,
});

Deno.test("a node's tile: cut off before all, then failed, then what its pods say", () => {
  const cases: [Partial<NodeReport>, string][] = [
    [{}, "updated"],
    [{ available: false }, "updating"],
    [{ revision: "old", leaving: true }, "updating"],
    [{ revision: "old" }, "old"],
    [{ revision: "old", inScope: false }, "held"],
    [{ revision: "old", available: false }, "unavailable"],
    [{ revision: "none", available: false }, "unavailable"],
    [{ failed: "CrashLoopBackOff" }, "failed"],
    [{ failed: "CrashLoopBackOff", cutOff: true }, "cut-off"],
    [{ revision: "old", inScope: false, cutOff: true }, "cut-off"],
  ];
  assertEquals(
    cases.map(([over]) => tileState(report(over))),
    cases.map(([, state]) => state),
  );
});

Deno.test("a set's view: tiles by zone and name, counts by state, and the tiles an update changes", () => {
  const node = (name: string, zone?: string) => ({
    metadata: { name, ...(zone ? { labels: { [zoneLabel]: zone } } : {}) },
  });
  const snapshot = {
    kind: "AdvancedDaemonSet",
    set: {
      apiVersion: "apps.edgeroll.dev/v1alpha1",
      kind: "AdvancedDaemonSet",
      metadata: { name: "agent", namespace: "edge", generation: 1 },
      spec: {
        selector: { matchLabels: { app: "a" } },
        template: {
          metadata: { labels: { app: "a" } },
          spec: { containers: [{ name: "a", image: "a:1" }] },
        },
        updateStrategy: { rollingUpdate: { maxUnavailable: "50%" } },
      },
    },
    pods: [],
    nodes: [node("b-2", "b"), node("a-1", "a"), node("b-1", "b"), node("x")],
    revisions: [],
  } as unknown as Snapshot;
  const planned = {
    status: { desiredNumberScheduled: 4, updatedNumberScheduled: 1, numberUnavailable: 1 },
    budget: { rule: "maxUnavailable", limit: 2, inUse: 1 },
    conditions: [],
    nodes: [
      report({ node: "b-2" }),
      report({ node: "a-1", revision: "old" }),
      report({ node: "b-1", cutOff: true }),
      report({ node: "x", revision: "none", available: false }),
    ],
  } as unknown as Plan;
  const ref = { kind: "advanceddaemonsets" as const, namespace: "edge", name: "agent" };
  const view = setView(ref, snapshot, planned, []);
  assertEquals(
    view.groups.map(([zone, tiles]) => [zone, tiles.map((t) => `${t.node}:${t.state}`)]),
    [["(no zone)", ["x:unavailable"]], ["a", ["a-1:old"]], ["b", ["b-1:cut-off", "b-2:updated"]]],
  );
  assertEquals(view.counts, {
    updated: 1,
    updating: 0,
    old: 1,
    held: 0,
    unavailable: 1,
    "cut-off": 1,
    failed: 0,
  });
  assertEquals(view.budget, { rule: "maxUnavailable", limit: 2, inUse: 1 }, "the plan's budget");
  assertEquals(changedTiles(undefined, view).length, 4);
  const later = setView(ref, snapshot, {
    ...planned,
    nodes: [...planned.nodes.slice(0, 1), report({ node: "a-1" }), ...planned.nodes.slice(2)],
  }, []);
  assertEquals(changedTiles(view, later), [["a-1", "updated"]]);
});
