import { assertEquals } from "@std/assert";
import type { Expectation } from "../api/advanced-daemonset.ts";
import type { Snapshot } from "../api/plan.ts";
import { readSet } from "./config.ts";
import {
  allowanceOf,
  decided,
  mergeDecisions,
  PhaseDecisions,
  type PlanFacts,
} from "./decisions.ts";
import type { NodeView } from "./node-view.ts";
import * as f from "./testdata/fleet.ts";

function facts(): PlanFacts {
  const reading = readSet({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet() as Snapshot["set"],
    pods: [],
    nodes: [],
    revisions: [],
  });
  if (!reading.ok) throw new Error("the fixture set does not read");
  return { config: reading.config, hash: "h2", now: f.t0, templates: new Map() };
}

function view(name: string): NodeView {
  const node = f.node(name);
  const placement = { shouldRun: true, shouldContinueRunning: true };
  return { name, node, ready: true, placement, live: [], leaving: [], observed: [] } as NodeView;
}

const expecting = (action: Expectation["action"]): Expectation => ({
  action,
  pod: "p",
  deadline: "2026-01-01T00:01:00Z",
});

Deno.test("a call's burst less what is still expected, each share apart", () => {
  const pending = [expecting("create"), expecting("delete"), expecting("setCondition")];
  assertEquals(allowanceOf(3, pending), { creations: 2, podWrites: 1 });
  assertEquals(allowanceOf(1, [...pending, expecting("create")]), { creations: 0, podWrites: 0 });
});

Deno.test("a phase spends its allowance, says when it ran out, and leaves the rest to the next", () => {
  const first = new PhaseDecisions(facts(), { creations: 1, podWrites: 5 });
  assertEquals(first.create(view("a"), "new node"), true);
  assertEquals(first.create(view("b"), "new node"), false, "the one creation is spent");
  const { decisions, left } = first.done();
  assertEquals(decisions.actions.map((a) => a.type), ["createPod"]);
  assertEquals(decisions.expectations.map((e) => [e.action, e.node]), [["create", "a"]]);
  assertEquals(decisions.moreWork, true);
  assertEquals(left, { creations: 0, podWrites: 5 });

  const next = new PhaseDecisions(facts(), left);
  assertEquals(next.create(view("b"), "new node"), false, "what the first spent stays spent");
  assertEquals(next.done().left, { creations: 0, podWrites: 5 });
});

Deno.test("decisions merged keep the phases' order; a budget held by one is kept", () => {
  const held = { holders: ["p"], blocked: 2, message: "maxUnavailable 1 is used by 1 pod" };
  const merged = mergeDecisions([
    decided({ awaited: [{ what: "a", why: "first" }], wakeUps: [2] }),
    decided({ awaited: [{ what: "b", why: "second" }], budgetHeld: held, moreWork: true }),
    decided({ polls: [1] }),
  ]);
  assertEquals(merged.awaited.map((a) => a.what), ["a", "b"]);
  assertEquals([merged.wakeUps, merged.polls], [[2], [1]]);
  assertEquals(merged.budgetHeld, held);
  assertEquals(merged.moreWork, true);
  assertEquals(mergeDecisions([decided({}), decided({})]).moreWork, false);
});
