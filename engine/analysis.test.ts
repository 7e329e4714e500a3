/**
 * Analysis checks (ADR 0055): measurements judged, gates over a plan's steps, background checks
 * that stop one zone while the others finish, inconclusive answers that never pass, and the
 * properties issue 40 names, through `plan` on the fake cluster of `testdata/fleet.ts`.
 */
import { assert, assertEquals } from "@std/assert";
import fc from "fast-check";
import {
  type AnalysisCheck,
  AnalysisCheck as CheckSchema,
  type AnalysisCheckInput,
  type AnalysisInput,
  type Measurement,
} from "../api/analysis.ts";
import { Keys, type Node } from "../api/kube-objects.ts";
import type { RolloutPlanInput } from "../api/rollout-plan.ts";
import type { Plan, Snapshot } from "../api/plan.ts";
import {
  type AdvancedDaemonSetStatus,
  resumeRevisionAnnotation,
} from "../api/advanced-daemonset.ts";
import { podNodeName } from "./pod-node-state.ts";
import { judgeMeasurement } from "./analysis.ts";
import { plan } from "./plan.ts";
import { formatTime } from "./pod-node-state.ts";
import * as f from "./testdata/fleet.ts";

const zoneLabel = "topology.kubernetes.io/zone";
const prometheus = "http://prom.test:9090";
const stepMillis = 5000;

const check = (input: Partial<AnalysisCheckInput>): AnalysisCheck =>
  CheckSchema.parse({
    name: "errors",
    prometheus: { address: prometheus, query: 'ratio{zone="{{domain}}"}' },
    successCondition: { max: 0.05 },
    ...input,
  });

const at = formatTime(f.t0);

Deno.test("a measurement: ranges as Argo reads them, every series judged, no answer never a pass", () => {
  const ratio = check({});
  const judged = (c: AnalysisCheck, m: Partial<Measurement>) =>
    judgeMeasurement(c, { check: c.name, at, ...m }).phase;
  assertEquals(judged(ratio, { values: [0.01] }), "Passed");
  assertEquals(judged(ratio, { values: [0.2] }), "Failed");
  // Several series must each pass: one failing fails the measurement.
  assertEquals(judged(ratio, { values: [0.01, 0.2, 0.01] }), "Failed");
  for (const empty of [[], [Number.NaN], [null]]) {
    assertEquals(judged(ratio, { values: empty }), "Inconclusive", JSON.stringify(empty));
  }
  assertEquals(judged(ratio, { error: "connect ECONNREFUSED" }), "Inconclusive");
  assertEquals(judged(ratio, { refused: "parse error" }), "Inconclusive");
  // Only a failure range: a value outside passes; both ranges: a value in neither decides nothing.
  const onlyFailure = check({ successCondition: undefined, failureCondition: { min: 0.1 } });
  assertEquals(judged(onlyFailure, { values: [0.05] }), "Passed");
  assertEquals(judged(onlyFailure, { values: [0.1] }), "Failed");
  const both = check({ successCondition: { max: 0.01 }, failureCondition: { min: 0.1 } });
  assertEquals(judged(both, { values: [0.05] }), "Inconclusive");
  assertEquals(judged(both, { values: [0.005, 0.05] }), "Inconclusive");
  assertEquals(judged(both, { values: [0.005, 0.05, 0.5] }), "Failed");
  // HTTP: 2xx passes without a field; any other answer fails; a field is judged by equals.
  const http = check({ prometheus: undefined, http: { url: "http://svc.test/healthz" } });
  assertEquals(judged(http, { httpStatus: 204 }), "Passed");
  assertEquals(judged(http, { httpStatus: 503 }), "Failed");
  assertEquals(judged(http, { error: "timed out after 10 s" }), "Inconclusive");
  const field = check({
    prometheus: undefined,
    http: { url: "http://svc.test/status", jsonPath: "state" },
    successCondition: { equals: "ok" },
  });
  assertEquals(judged(field, { httpStatus: 200, values: ["ok"] }), "Passed");
  assertEquals(judged(field, { httpStatus: 200, values: ["degraded"] }), "Failed");
  assertEquals(judged(field, { httpStatus: 200, values: [] }), "Inconclusive");
});

/** Zones a (2 nodes), b (2), c (2). */
function zonedNodes(): Node[] {
  return ["a", "b", "c"].flatMap((zone) =>
    [1, 2].map((i) => f.node(`${zone}-${i}`, { labels: { [zoneLabel]: zone } }))
  );
}

function gatedSet(
  rolloutPlan: Partial<RolloutPlanInput>,
  analysis: Partial<AnalysisInput> = {},
  rollingUpdate: object = {},
): Snapshot {
  const s = f.plannedSnapshot(
    { domainLabel: zoneLabel, steps: [{ nodes: "100%" }], ...rolloutPlan },
    { maxUnavailable: 1, ...rollingUpdate },
    zonedNodes(),
  );
  const strategy = (s.set.spec as {
    updateStrategy: { rollingUpdate: Record<string, unknown> };
  }).updateStrategy;
  strategy.rollingUpdate.analysis = {
    checks: [{
      name: "errors",
      prometheus: { address: prometheus, query: 'ratio{zone="{{domain}}"}' },
      successCondition: { max: 0.05 },
      intervalSeconds: 10,
      count: 2,
    }],
    ...analysis,
  };
  return { ...s, analysis: { allowedHosts: ["prom.test:9090"], measurements: [] } };
}

/** Reconciles `rounds` times, `stepMillis` apart: every plan, and the cluster at the end. */
function run(c: f.Cluster, now: number, source: f.MeasureSource, rounds: number) {
  const plans: Plan[] = [];
  for (let i = 0; i < rounds; i++, now += stepMillis) {
    const [p, next] = f.measuredStep(c, now, source);
    plans.push(p);
    c = next;
  }
  return { plans, c, now, last: plans[plans.length - 1] };
}

function onV1ThenV2(snapshot: Snapshot) {
  const first = run(f.cluster(snapshot), f.t0, () => ({ values: [0] }), 12);
  assertEquals(first.last.status.plan?.state, "Done");
  return { c: f.withTemplate(first.c, "agent:v2", 2), now: first.now };
}

function nodesOn(c: f.Cluster, hash: string): string[] {
  return c.snapshot.pods.filter((p) => p.metadata.labels?.[Keys.revisionHash] === hash)
    .map((p) => podNodeName(p) ?? "").sort();
}

const ratios = (byZone: Record<string, number>): f.MeasureSource => (domain) => ({
  values: [byZone[domain ?? ""] ?? 0],
});

Deno.test("a step's gate: measured per domain it reached, count times, before the next step", () => {
  const start = onV1ThenV2(gatedSet({
    steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%" }],
  }));
  const out = run(start.c, start.now, ratios({}), 30);
  const hash = out.last.status.daemonSetHash!;
  assertEquals(nodesOn(out.c, hash).length, 6);
  assertEquals(out.last.status.plan?.state, "Done");
  // While zone a's gate measured, no node of b or c was updated.
  const analyzing = out.plans.filter((p) => p.status.plan?.state === "Analyzing");
  assert(analyzing.length >= 2, `analyzing in ${analyzing.length} plans`);
  for (const p of analyzing) {
    assertEquals(p.status.plan?.domains.map((d) => [d.name, d.updated]), [
      ["a", 2],
      ["b", 0],
      ["c", 0],
    ]);
    assert(p.awaited.some((a) => a.what === "step 1 checks"));
    assertEquals(p.conditions.find((c) => c.type === "Paused")?.reason, "Analyzing");
  }
  const passed = out.plans.flatMap((p) => p.events).filter((e) => e.reason === "AnalysisPassed");
  assertEquals(passed.map((e) => e.message.includes("errors in a passed: 2 of 2")), [true]);
});

Deno.test("a zone whose ratio rises after its pods update is stopped while the other zones finish", () => {
  const start = onV1ThenV2(gatedSet({}, { background: ["errors"] }));
  const out = run(start.c, start.now, ratios({ b: 0.4 }), 40);
  const hash = out.last.status.daemonSetHash!;
  const updated = nodesOn(out.c, hash);
  assert(updated.includes("a-1") && updated.includes("a-2"), updated.join());
  assert(updated.includes("c-1") && updated.includes("c-2"), updated.join());
  // Zone b: stopped at its first node (maxUnavailable 1); the other stays on the old revision.
  assertEquals(updated.filter((n) => n.startsWith("b-")).length, 1);
  assertEquals(out.last.status.plan?.state, "Stopped");
  assertEquals(out.last.status.plan?.domains.find((d) => d.name === "b")?.state, "Stopped");
  const progressing = out.last.conditions.find((c) => c.type === "Progressing");
  assertEquals(progressing?.reason, "AnalysisFailed");
  assert(progressing?.message?.includes("errors in b"), progressing?.message);
  // The check's verdict is told once, and the stop it makes in the RolloutStopped condition.
  const failed = out.plans.flatMap((p) => p.events).filter((e) => e.reason === "AnalysisFailed");
  assertEquals(failed.filter((e) => e.message.includes("check errors in b failed")).length, 1);
  const stopped = out.last.conditions.find((c) => c.type === "RolloutStopped");
  assertEquals([stopped?.status, stopped?.reason], ["True", "AnalysisFailed"]);
  // Measured no more once the rollout ended: nothing is due, nothing wakes the set for it.
  const status = out.last.status.analysis!;
  assert(status.checks.every((c) => c.nextAt === undefined), JSON.stringify(status.checks));
  assertEquals(
    status.checks.map((c) => [c.domain, c.phase]).sort(),
    [["a", "Passed"], ["b", "Failed"], ["c", "Passed"]],
  );
  // A resume of the revision measures b again; with a ratio back down, b finishes.
  const s = structuredClone(out.c.snapshot);
  s.set.metadata.annotations = { [resumeRevisionAnnotation]: `${hash}/1` };
  const resumed = run({ snapshot: s, serial: out.c.serial }, out.now, ratios({}), 20);
  assertEquals(nodesOn(resumed.c, hash).length, 6);
  assertEquals(resumed.last.status.plan?.state, "Done");
});

Deno.test("onFailure Rollback: the failed zone's nodes go back to the last complete revision while the others finish", () => {
  const start = onV1ThenV2(gatedSet({}, { background: ["errors"], onFailure: "Rollback" }));
  const v1 = (start.c.snapshot.set.status as AdvancedDaemonSetStatus).lastCompleteRevision ?? "";
  const out = run(start.c, start.now, ratios({ b: 0.4 }), 40);
  const hash = out.last.status.daemonSetHash!;
  assert(v1 !== "" && v1 !== hash);
  assertEquals(nodesOn(out.c, hash), ["a-1", "a-2", "c-1", "c-2"]);
  assertEquals(nodesOn(out.c, v1), ["b-1", "b-2"]);
  assertEquals(
    out.last.status.plan?.domains.map((d) => [d.name, d.state]),
    [["a", "Done"], ["b", "RolledBack"], ["c", "Done"]],
  );
  // The rollback of b's node is a replacement within the budget, named as such.
  const back = out.plans.flatMap((p) => p.actions).filter((a) =>
    a.reason.includes(`back to revision ${v1}`)
  );
  assertEquals(back.length, 1);
  // Never more than maxUnavailable (1) of the Ready nodes without an available pod at once.
  for (const p of out.plans) {
    assert((p.status.numberUnavailable ?? 0) <= 1, JSON.stringify(p.status.numberUnavailable));
  }
  // Nothing is rolled forward again: the plan stays stopped until a resume or a new revision.
  const later = run(out.c, out.now, ratios({}), 5);
  assertEquals(nodesOn(later.c, v1), ["b-1", "b-2"]);
});

/**
 * `start` rolled on, every measurement passing, until every node runs the revision and is
 * available while its background checks still bake: not complete, the last complete revision
 * still the way back.
 */
function updatedWhileBaking(start: { c: f.Cluster; now: number }) {
  const v1 = (start.c.snapshot.set.status as AdvancedDaemonSetStatus).lastCompleteRevision ?? "";
  let c = start.c;
  let now = start.now;
  for (let i = 0; i < 40; i++, now += stepMillis) {
    const [p, next] = f.measuredStep(c, now, ratios({}));
    c = next;
    if (nodesOn(c, p.status.daemonSetHash!).length === 6) break;
  }
  const baking = plan(c.snapshot, now);
  assertEquals([baking.status.updatedNumberScheduled, baking.status.numberAvailable], [6, 6]);
  assertEquals(baking.status.plan?.state, "Analyzing");
  assertEquals(conditionOf(baking, "Complete")?.status, "False");
  assertEquals(baking.status.lastCompleteRevision, v1);
  return { c, now, v1 };
}

/** A background check of `query` baking 12 measurements, 10 s apart, over zones a, b and c. */
const baked = (query: string, onFailure: "Pause" | "Rollback") =>
  onV1ThenV2(gatedSet({ maxConcurrentDomains: 3 }, {
    checks: [{
      name: "errors",
      prometheus: { address: prometheus, query },
      successCondition: { max: 0.05 },
      intervalSeconds: 10,
      count: 12,
    }],
    background: ["errors"],
    onFailure,
  }));

const conditionOf = (p: Plan, type: string) => p.conditions.find((c) => c.type === type);

Deno.test("a ratio rising in a zone's bake after every node is updated still rolls it back: the revision was never complete", () => {
  const { c, now, v1 } = updatedWhileBaking(baked('ratio{zone="{{domain}}"}', "Rollback"));
  const out = run(c, now, ratios({ b: 0.4 }), 40);
  const hash = out.last.status.daemonSetHash!;
  assertEquals(nodesOn(out.c, v1), ["b-1", "b-2"]);
  assertEquals(nodesOn(out.c, hash), ["a-1", "a-2", "c-1", "c-2"]);
  // Once a's and c's bakes passed too: b's check failed, so the revision is still not complete.
  assertEquals(
    out.last.status.analysis?.checks.map((s) => [s.domain, s.phase]),
    [["a", "Passed"], ["b", "Failed"], ["c", "Passed"]],
  );
  for (const p of out.plans) {
    assertEquals(conditionOf(p, "Complete")?.status, "False");
    assertEquals(p.status.lastCompleteRevision, v1);
  }
});

const unreachable: f.MeasureSource = () => ({
  error: "Prometheus unreachable: connect ECONNREFUSED",
});

const progressing = (p: Plan) => p.conditions.find((c) => c.type === "Progressing");

Deno.test("no answer from Prometheus: the gate waits, says so, and the deadline still runs", () => {
  const start = onV1ThenV2(gatedSet(
    { steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%" }] },
    {},
    {},
  ));
  const out = run(f.withDeadline(start.c, 60), start.now, unreachable, 40);
  const hash = out.last.status.daemonSetHash!;
  assertEquals(nodesOn(out.c, hash), ["a-1", "a-2"]);
  assertEquals(out.last.status.plan?.state, "Analyzing");
  const standing = out.last.status.analysis!.checks.find((c) => c.domain === "a")!;
  assertEquals([standing.phase, standing.passed, standing.failed], ["Inconclusive", 0, 0]);
  assert(standing.inconclusive >= 10, `${standing.inconclusive}`);
  assertEquals(standing.measurements.length, 3);
  // Told once, not at every measurement.
  const told = out.plans.flatMap((p) => p.events).filter((e) =>
    e.reason === "AnalysisInconclusive"
  );
  assertEquals(told.length, 1);
  assertEquals(
    out.last.conditions.find((c) => c.type === "Progressing")?.reason,
    "ProgressDeadlineExceeded",
  );
});

Deno.test("an inconclusive last gate after every node is updated reaches the progress deadline; with stopOnProgressDeadline it stops", () => {
  const deadlineSeconds = 60;
  const start = onV1ThenV2(gatedSet({
    maxConcurrentDomains: 3,
    steps: [{ nodes: "100%", checks: ["errors"] }],
  }));
  for (const stopOnProgressDeadline of [false, true]) {
    const policy = { maxFailed: 10, stopOnProgressDeadline };
    const out = run(f.withDeadline(start.c, deadlineSeconds, policy), start.now, unreachable, 60);
    const hash = out.last.status.daemonSetHash!;
    const at = (i: number) => start.now + i * stepMillis;
    const exceeded = out.plans.findIndex((p) =>
      progressing(p)?.reason === "ProgressDeadlineExceeded"
    );
    assert(exceeded > 0, `no deadline (stop ${stopOnProgressDeadline})`);
    const late = out.plans[exceeded];
    // Reached with every node updated and available: only the gate held the rollout.
    assertEquals(late.status.updatedNumberScheduled, 6);
    assertEquals(late.status.numberAvailable, 6);
    // Still measuring; stopped by the deadline when the policy says so (the plan then Stopped).
    assertEquals(late.status.plan?.state, stopOnProgressDeadline ? "Stopped" : "Analyzing");
    // At the deadline counted from the last node that became available, not before.
    const lastProgress = Date.parse(late.status.progress!.at);
    assert(at(exceeded) >= lastProgress + deadlineSeconds * 1000);
    assert(at(exceeded - 1) < lastProgress + deadlineSeconds * 1000);
    assertEquals(nodesOn(out.c, hash).length, 6);
    assertEquals(out.last.conditions.find((c) => c.type === "Complete")?.status, "False");
    const stopped = out.last.conditions.find((c) => c.type === "RolloutStopped");
    if (stopOnProgressDeadline) {
      assertEquals([stopped?.status, stopped?.reason], ["True", "ProgressDeadlineExceeded"]);
      assertEquals(out.last.status.rolloutStop?.reason, "ProgressDeadlineExceeded");
    } else {
      assertEquals(stopped?.status, "False");
      assertEquals(progressing(out.last)?.reason, "ProgressDeadlineExceeded");
      const message = progressing(out.last)?.message;
      assert(message?.includes("no check counted a measurement for 60 s"), message);
    }
  }
});

Deno.test("a bake longer than the deadline whose measurements pass never reaches it, nor does the rollout once complete", () => {
  const deadlineSeconds = 60;
  const bake = { count: 12, intervalSeconds: 10 };
  const start = onV1ThenV2(gatedSet({ maxConcurrentDomains: 3 }, {
    checks: [{
      name: "errors",
      prometheus: { address: prometheus, query: 'ratio{zone="{{domain}}"}' },
      successCondition: { max: 0.05 },
      ...bake,
    }],
    background: ["errors"],
  }));
  const policy = { maxFailed: 10, stopOnProgressDeadline: true };
  const out = run(f.withDeadline(start.c, deadlineSeconds, policy), start.now, ratios({}), 100);
  const updated = out.plans.findIndex((p) =>
    p.status.numberAvailable === 6 &&
    p.status.updatedNumberScheduled === 6
  );
  const complete = out.plans.findIndex((p) => progressing(p)?.reason === "Complete");
  assert(updated > 0 && complete > updated, `updated ${updated}, complete ${complete}`);
  // The bake outlasted the deadline: its counted measurements were the progress.
  assert((complete - updated) * stepMillis > deadlineSeconds * 1000, `${complete - updated}`);
  // Complete, then five minutes more with nothing pending: no deadline, no stop, no wake-up.
  assert((out.plans.length - complete) * stepMillis >= 5 * deadlineSeconds * 1000);
  for (const p of out.plans) {
    assert(progressing(p)?.reason !== "ProgressDeadlineExceeded", progressing(p)?.message);
    assertEquals(p.status.rolloutStop, undefined);
  }
  assertEquals(out.last.status.nextCheckAt, undefined);
});

Deno.test("a check of the whole set that fails stops the rollout, and rolls it back when asked", () => {
  const start = onV1ThenV2(gatedSet({ maxConcurrentDomains: 3 }, {
    checks: [{
      name: "errors",
      prometheus: { address: prometheus, query: "sum(errors) / sum(requests)" },
      successCondition: { max: 0.05 },
      intervalSeconds: 10,
    }],
    background: ["errors"],
    onFailure: "Rollback",
  }));
  const out = run(start.c, start.now, () => ({ values: [0.3] }), 30);
  const first = out.plans.findIndex((p) => p.status.rolloutStop?.reason === "AnalysisFailed");
  assert(first > 0, "no stop");
  const rollbacks = (p: Plan) => p.actions.filter((a) => a.type === "rollbackTemplate");
  assertEquals(out.plans.slice(0, first).flatMap(rollbacks), []);
  const [rollback] = rollbacks(out.plans[first]);
  const v1 = out.plans[0].status.lastCompleteRevision;
  assert(v1 !== undefined && v1 !== out.last.status.daemonSetHash);
  assertEquals(rollback?.type === "rollbackTemplate" && rollback.revision, v1);
  // Stopped: no old pod is replaced after the stop.
  const deletes = out.plans.slice(first).flatMap((p) => p.actions)
    .filter((a) => a.type === "deletePod");
  assertEquals(deletes, []);
});

Deno.test("a check of the whole set failing in its bake after every node is updated stops the rollout, never complete; rolled back when asked", () => {
  const rising: f.MeasureSource = () => ({ values: [0.3] });
  for (const onFailure of ["Pause", "Rollback"] as const) {
    const { c, now, v1 } = updatedWhileBaking(baked("sum(errors) / sum(requests)", onFailure));
    const out = run(c, now, rising, 4);
    const v2 = out.last.status.daemonSetHash!;
    assert(v1 !== "" && v1 !== v2);
    const first = out.plans.findIndex((p) => p.status.rolloutStop?.reason === "AnalysisFailed");
    assert(first >= 0, `no stop (${onFailure})`);
    // No node outdated, nothing measuring: stopped all the same, and v2 never recorded complete.
    for (const p of out.plans) {
      assertEquals(p.status.updatedNumberScheduled, 6);
      assertEquals(conditionOf(p, "Complete")?.status, "False");
      assertEquals(p.status.lastCompleteRevision, v1);
    }
    const stopped = conditionOf(out.last, "RolloutStopped");
    assertEquals([stopped?.status, stopped?.reason], ["True", "AnalysisFailed"]);
    assertEquals(progressing(out.last)?.reason, "AnalysisFailed");
    // The plan is not Done but Stopped, by the check (the plan's own state Event is left out
    // while the rollout is stopped: reportPlan).
    assertEquals(out.last.status.plan?.state, "Stopped");
    assertEquals(out.last.status.plan?.stop?.reason, "AnalysisFailed");
    const events = out.plans.flatMap((p) => p.events);
    assertEquals(events.filter((e) => e.reason === "PlanDone"), []);
    // The verdict, then the stop, each told once and naming the check.
    assertEquals(
      events.filter((e) => e.reason === "AnalysisFailed").map((e) =>
        e.message.includes("check errors failed") || e.message.startsWith("failed checks: errors;")
      ),
      [true, true],
    );
    const rollbacks = out.plans.flatMap((p) => p.actions).filter((a) =>
      a.type === "rollbackTemplate"
    );
    if (onFailure === "Pause") {
      assertEquals(rollbacks, []);
      assertEquals(nodesOn(out.c, v2).length, 6);
      continue;
    }
    assert(rollbacks.length > 0);
    for (const a of rollbacks) assertEquals(a.type === "rollbackTemplate" && a.revision, v1);
    // The API server applies the patch: v1's pods replace v2's within the budget, and it completes.
    const back = run(f.withTemplate(out.c, "agent:v1", 3), out.now, ratios({}), 60);
    assertEquals(back.last.status.daemonSetHash, v1);
    assertEquals(nodesOn(back.c, v1).length, 6);
    for (const p of back.plans) {
      assert((p.status.numberUnavailable ?? 0) <= 1, JSON.stringify(p.status.numberUnavailable));
    }
    assertEquals(conditionOf(back.last, "Complete")?.status, "True");
    assertEquals(back.last.status.lastCompleteRevision, v1);
  }
});

Deno.test("a zone's bake failing after every node is updated: never complete, so Rollback set after the stop still takes that zone back, the others kept", () => {
  const { c, now, v1 } = updatedWhileBaking(baked('ratio{zone="{{domain}}"}', "Pause"));
  const out = run(c, now, ratios({ b: 0.4 }), 40);
  const v2 = out.last.status.daemonSetHash!;
  // a's and c's bakes passed, b's failed: stopped there, kept on v2 (Pause), and not complete.
  assertEquals(
    out.last.status.analysis?.checks.map((s) => [s.domain, s.phase]),
    [["a", "Passed"], ["b", "Failed"], ["c", "Passed"]],
  );
  assertEquals(
    out.last.status.plan?.domains.map((d) => [d.name, d.state]),
    [["a", "Done"], ["b", "Stopped"], ["c", "Done"]],
  );
  assertEquals(nodesOn(out.c, v2).length, 6);
  for (const p of out.plans) {
    assertEquals(conditionOf(p, "Complete")?.status, "False");
    assertEquals(p.status.lastCompleteRevision, v1);
  }
  // The operator asks for Rollback: b goes back to v1, within the budget; a and c stay on v2.
  const s = structuredClone(out.c.snapshot);
  (s.set.spec as { updateStrategy: { rollingUpdate: { analysis: { onFailure: string } } } })
    .updateStrategy.rollingUpdate.analysis.onFailure = "Rollback";
  const later = run({ snapshot: s, serial: out.c.serial }, out.now, ratios({}), 20);
  assertEquals(later.last.status.daemonSetHash, v2);
  assertEquals(nodesOn(later.c, v1), ["b-1", "b-2"]);
  assertEquals(nodesOn(later.c, v2), ["a-1", "a-2", "c-1", "c-2"]);
  assertEquals(
    later.last.status.plan?.domains.map((d) => [d.name, d.state]),
    [["a", "Done"], ["b", "RolledBack"], ["c", "Done"]],
  );
  for (const p of later.plans) {
    assert((p.status.numberUnavailable ?? 0) <= 1, JSON.stringify(p.status.numberUnavailable));
    assertEquals(p.status.lastCompleteRevision, v1);
  }
});

Deno.test("bad checks are InvalidSpec naming the field, before any pod is touched", () => {
  const invalid = (snapshot: Snapshot) => {
    const p = plan(snapshot, f.t0);
    assertEquals(p.actions.filter((a) => a.type.endsWith("Pod")), []);
    const condition = p.conditions.find((c) => c.type === "InvalidSpec");
    assertEquals(condition?.status, "True");
    return condition?.message ?? "";
  };
  const path = "spec.updateStrategy.rollingUpdate.analysis";
  const notAllowed = gatedSet({});
  notAllowed.analysis = { allowedHosts: ["other.test:9090"], measurements: [] };
  const refused = invalid(notAllowed);
  assert(refused.includes(`${path}.checks[0].prometheus.address`), refused);
  assert(refused.includes("prom.test:9090 is not among the hosts"), refused);
  const noUrl = invalid(gatedSet({}, {
    checks: [{ name: "up", http: { url: "not a url" } }],
  }));
  assert(noUrl.includes(`${path}.checks[0].http.url`) && noUrl.includes("no http(s) URL"), noUrl);
  const unknown = invalid(gatedSet({ steps: [{ nodes: "100%", checks: ["latency"] }] }));
  assert(unknown.includes("plan.steps[0].checks[0]: no check is named latency"), unknown);
  // {{domain}} needs a plan to say what a domain is.
  const planless = gatedSet({});
  const strategy = (planless.set.spec as {
    updateStrategy: { rollingUpdate: Record<string, unknown> };
  }).updateStrategy;
  delete strategy.rollingUpdate.plan;
  const message = invalid(planless);
  assert(message.includes(`${path}.checks[0].prometheus.query`), message);
  // A query Prometheus refuses when the queries changed: its own words, and nothing done.
  const refusedQuery = gatedSet({});
  refusedQuery.analysis!.validation = {
    queriesHash: "changed",
    refusals: [{ check: "errors", message: 'parse error: unexpected "}"' }],
  };
  const words = invalid(refusedQuery);
  assert(
    words.includes(`${path}.checks[0].prometheus.query: Prometheus refuses it: parse error`),
    words,
  );
  // Accepted: their hash is recorded, so the queries are not sent again until they change.
  const accepted = gatedSet({});
  accepted.analysis!.validation = { queriesHash: "changed", refusals: [] };
  const recorded = plan(accepted, f.t0).status;
  assertEquals(recorded.analysis?.validatedQueriesHash, "changed");
  // And kept by the plans after, which send nothing.
  const next = structuredClone(accepted);
  next.set.status = recorded;
  delete next.analysis!.validation;
  assertEquals(plan(next, f.t0 + 1000).status.analysis?.validatedQueriesHash, "changed");
});

Deno.test("property: a failed check never lets a later step start; an inconclusive one never passes", () => {
  const answer = fc.constantFrom<Partial<Measurement>>(
    { values: [0.01] },
    { values: [0.5] },
    { values: [] },
    { error: "503 Service Unavailable" },
  );
  fc.assert(
    fc.property(
      fc.array(answer, { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 0, max: 1 }),
      (answers, count, failureLimit) => {
        const start = onV1ThenV2(gatedSet(
          { steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%" }] },
          {
            checks: [{
              name: "errors",
              prometheus: { address: prometheus, query: 'ratio{zone="{{domain}}"}' },
              successCondition: { max: 0.05 },
              intervalSeconds: 5,
              count,
              failureLimit,
            }],
          },
        ));
        let i = 0;
        const out = run(start.c, start.now, () => answers[Math.min(i++, answers.length - 1)], 40);
        const hash = out.last.status.daemonSetHash!;
        // The oracle: Argo's rule over the answers as measured, the last one repeated.
        const judged = answers.map((m) =>
          judgeMeasurement(check({}), { check: "errors", at, ...m })
        );
        let passed = 0;
        let failed = 0;
        let passes: boolean | undefined;
        for (let k = 0; k < 20 && passes === undefined; k++) {
          const phase = judged[Math.min(k, judged.length - 1)].phase;
          if (phase === "Passed") passed++;
          if (phase === "Failed") failed++;
          if (failed > failureLimit) passes = false;
          else if (passed + failed >= count) passes = true;
        }
        const beyond = nodesOn(out.c, hash).filter((n) => !n.startsWith("a-"));
        // The gate passed exactly when its counted measurements say so: zones b and c follow.
        assertEquals(
          beyond.length > 0,
          passes === true,
          JSON.stringify({ answers, count, failureLimit }),
        );
      },
    ),
    { numRuns: 40 },
  );
});
