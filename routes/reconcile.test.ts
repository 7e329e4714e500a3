import { assertEquals } from "@std/assert";
import { KubeError } from "../kube/errors.ts";
import { harness, onePodPerNode } from "../tests/doubles/controller-harness.ts";
import type { Plan, Snapshot } from "../api/plan.ts";

const path = "/reconcile/advanceddaemonsets/edge/agent";

Deno.test("reconcile reads, plans, claims, acts and answers", async () => {
  await using h = harness({ nodes: 3 });
  const res = await h.request(path);
  assertEquals(res.status, 200);
  const body = await res.json();
  assertEquals(body.set, "advanceddaemonsets/edge/agent");
  assertEquals([body.managed, body.claimed, body.conflicts, body.requeueAfter], [true, true, 0, 5]);
  assertEquals(
    body.actions.map((a: { target: string; result: string }) => `${a.target} ${a.result}`),
    [
      "pod/agent-node-0 on node/node-0 done",
      "pod/agent-node-1 on node/node-1 done",
      "pod/agent-node-2 on node/node-2 done",
    ],
  );
  assertEquals(body.status.desiredNumberScheduled, 3);
  assertEquals(body.status.numberUnavailable, 3, "claimed before acting");
  // The step that follows its pod writes counts the pods, and creates none.
  await h.controller.queue.idle();
  const stored = h.api.objects.advanceddaemonsets.get("edge/agent")!;
  assertEquals((stored.status as { numberUnavailable: number }).numberUnavailable, 0);
  assertEquals(h.api.writes.filter((w) => w === "create pods").length, 3);
  assertEquals(h.api.writes.filter((w) => w === "create events").length, 1);
});

Deno.test("a reconcile whose pod writes landed is followed at once by one that counts them", async () => {
  await using h = harness({ nodes: 3 });
  const body = await (await h.request(path)).json();
  assertEquals(body.status.currentNumberScheduled, 0, "the claim was written before the act");
  // No event, no tick and no cache here: only the step that acted can ask for the next.
  await h.controller.queue.idle();
  const stored = h.api.objects.advanceddaemonsets.get("edge/agent")!;
  assertEquals((stored.status as { currentNumberScheduled: number }).currentNumberScheduled, 3);
  assertEquals(h.plans.length, 2, "the next step acted on nothing, so none followed it");
});

Deno.test("a step that wrote no pod asks for no other: a dry run, a converged set", async () => {
  await using h = harness({ nodes: 2 });
  await h.request(`${path}?dryRun=true`);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, 1);
  await h.request(path);
  await h.controller.queue.idle();
  const plans = h.plans.length;
  await h.request(path);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, plans + 1);
});

Deno.test("a second reconcile of a converged set writes nothing", async () => {
  await using h = harness({ nodes: 3 });
  await h.request(path);
  await h.request(path); // observes the pods: status changes once more
  const writes = h.api.writes.length;
  for (let i = 0; i < 5; i++) {
    const body = await (await h.request(path)).json();
    assertEquals([body.claimed, body.actions.length], [false, 0]);
  }
  assertEquals(h.api.writes.length, writes);
});

Deno.test("dryRun plans without writing", async () => {
  await using h = harness({ nodes: 2 });
  const body = await (await h.request(`${path}?dryRun=true`)).json();
  assertEquals(body.dryRun, true);
  assertEquals(body.actions.map((a: { result: string }) => a.result), ["planned", "planned"]);
  assertEquals(h.api.writes, []);
});

Deno.test("a missing set answers 404 in JSON", async () => {
  await using h = harness();
  const res = await h.request("/reconcile/advanceddaemonsets/edge/nope");
  assertEquals(res.status, 404);
  assertEquals((await res.json()).error.reason, "NotFound");
});

Deno.test("a DaemonSet without the OpenYurt annotation answers 200 and does nothing", async () => {
  await using h = harness();
  h.api.put("daemonsets", {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "plain", namespace: "edge" },
    spec: { selector: { matchLabels: { app: "plain" } }, template: { spec: { containers: [] } } },
  });
  const res = await h.request("/reconcile/daemonsets/edge/plain");
  assertEquals(res.status, 200);
  const body = await res.json();
  assertEquals([body.managed, body.actions, body.claimed], [false, [], false]);
  assertEquals(h.plans.length, 0, "the planner is not asked");
  assertEquals(h.api.writes, []);
});

Deno.test("a lost claim re-reads and re-plans, and acts once", async () => {
  let conflicts = 1;
  await using h = harness({
    nodes: 2,
    overrides: {
      replaceSetStatus: (param, next) => {
        if (conflicts-- > 0) {
          return Promise.reject(
            new KubeError(409, "Conflict", "the object has been modified", "update"),
          );
        }
        return next(param);
      },
    },
  });
  const body = await (await h.request(path)).json();
  assertEquals([body.conflicts, body.claimed, body.actions.length], [1, true, 2]);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, 3, "two plans for the step, one for the step its writes ask for");
  assertEquals(h.api.writes.filter((w) => w === "create pods").length, 2);
});

Deno.test("a set that keeps changing answers 409 and acts not at all", async () => {
  await using h = harness({
    overrides: {
      replaceSetStatus: () => Promise.reject(new KubeError(409, "Conflict", "modified", "update")),
    },
  });
  const res = await h.request(path);
  assertEquals(res.status, 409);
  const body = await res.json();
  assertEquals([body.error.reason, body.error.retryable], ["Conflict", true]);
  assertEquals(h.api.writes.filter((w) => w.startsWith("create pods")), []);
});

Deno.test("reconciles of one set take turns, whoever calls them: none loses a claim to another", async () => {
  // Each step's status differs from the last (a step count), so each writes its claim; a read
  // answered late lets concurrent steps hold the same resourceVersion, as a curl loop beside the
  // queue's follow-up did on cluster/ (409 after three lost claims).
  let steps = 0;
  await using h = harness({
    nodes: 3,
    overrides: {
      getSet: async (param, next) => {
        const set = await next(param);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return set;
      },
    },
    plan: (snapshot) => {
      const plan = onePodPerNode(snapshot);
      return { ...plan, status: { ...plan.status, numberReady: ++steps } };
    },
  });
  const answers = await Promise.all(
    Array.from({ length: 5 }, async () => await (await h.request(path)).json()),
  );
  await h.controller.queue.idle();
  assertEquals(answers.map((a) => a.conflicts), [0, 0, 0, 0, 0]);
  assertEquals(h.logs.lines.filter((l) => l.msg === "status claim lost, reading again"), []);
  assertEquals(h.api.writes.filter((w) => w === "create pods").length, 3);
});

Deno.test("an API server that keeps failing answers 503, retryable", async () => {
  await using h = harness({
    overrides: {
      listNodes: () => Promise.reject(new KubeError(500, "InternalError", "boom", "list")),
    },
  });
  const res = await h.request(path);
  assertEquals(res.status, 503);
  assertEquals((await res.json()).error.retryable, true);
});

Deno.test("a failed pod create is reported, the claim stands, the rest waits", async () => {
  await using h = harness({
    nodes: 3,
    overrides: {
      createPod: (param, next) =>
        param.body.metadata.name === "agent-node-0"
          ? Promise.reject(new KubeError(422, "Invalid", "bad pod", "create"))
          : next(param),
    },
  });
  const body = await (await h.request(path)).json();
  assertEquals(body.actions.map((a: { result: string }) => a.result), [
    "failed",
    "skipped",
    "skipped",
  ]);
  assertEquals(body.actions[0].error.includes("bad pod"), true);
  assertEquals(
    h.logs.lines.some((l) =>
      l.msg === "action failed" && l.set === "advanceddaemonsets/edge/agent"
    ),
    true,
  );
});

Deno.test("bad parameters answer 400 with the zod issues", async () => {
  await using h = harness();
  for (
    const bad of [
      "/reconcile/deployments/edge/agent",
      "/reconcile/advanceddaemonsets/Edge/agent",
      "/reconcile/advanceddaemonsets/edge/agent_1",
      `${path}?dryRun=maybe`,
    ]
  ) {
    const res = await h.request(bad);
    assertEquals(res.status, 400, bad);
    const body = await res.json();
    assertEquals(body.error.reason, "BadRequest");
    assertEquals(body.error.issues.length > 0, true, bad);
  }
  assertEquals(h.plans.length, 0);
});

Deno.test("the status of a plain DaemonSet is claimed in its RolloutStatus; the DaemonSet is not written", async () => {
  await using h = harness({ nodes: 1 });
  const daemonSet = h.api.put("daemonsets", {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "yurt",
      namespace: "edge",
      generation: 2,
      annotations: { "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate" },
    },
    spec: {
      selector: { matchLabels: { app: "yurt" } },
      updateStrategy: { type: "OnDelete" },
      template: { spec: { containers: [] } },
    },
  });
  const res = await h.request("/reconcile/daemonsets/edge/yurt");
  assertEquals(res.status, 200);
  const stored = h.api.objects.rolloutstatuses.get("edge/yurt")!;
  assertEquals((stored.status as { observedGeneration: number }).observedGeneration, 2);
  assertEquals(stored.metadata.ownerReferences?.[0].uid, daemonSet.metadata.uid);
  assertEquals(
    h.api.objects.daemonsets.get("edge/yurt")!.metadata.resourceVersion,
    daemonSet.metadata.resourceVersion,
  );
  assertEquals(h.api.writes.filter((w) => w.includes("daemonsets")), []);
});

/** The harness's plan, with an expectation and an Event for each pod it creates. */
const withExpectations = (snapshot: Snapshot): Plan => {
  const plan = onePodPerNode(snapshot);
  const created = plan.actions.flatMap((a) => a.type === "createPod" ? [a.pod.metadata.name!] : []);
  return {
    ...plan,
    status: {
      ...plan.status,
      expectations: created.map((pod) => ({
        action: "create" as const,
        pod,
        deadline: "2026-06-01T12:01:00Z",
      })),
    },
    events: created.map((pod) => ({
      type: "Normal" as const,
      reason: "SuccessfulCreate",
      message: pod,
      pod,
    })),
  };
};

/**
 * Three creates whose middle one (node-1) fails with `error`: the results, the expectations the
 * status keeps, and the Events written.
 */
async function withFailedCreate(error: KubeError) {
  // The step its writes ask for reads only once this one's status has been read.
  const read = Promise.withResolvers<void>();
  let reads = 0;
  await using h = harness({
    nodes: 3,
    plan: withExpectations,
    overrides: {
      createPod: (param, next) =>
        param.body.metadata.name === "agent-node-1" ? Promise.reject(error) : next(param),
      getSet: (param, next) => ++reads === 1 ? next(param) : read.promise.then(() => next(param)),
    },
  });
  const body = await (await h.request(path)).json();
  const stored = h.api.objects.advanceddaemonsets.get("edge/agent")!.status as Plan["status"];
  read.resolve();
  return {
    results: body.actions.map((a: { result: string }) => a.result),
    expected: stored.expectations?.map((e) => e.pod),
    answered: body.status.expectations.length,
    events: [...h.api.objects.events.values()].map((e) => e.message).sort(),
  };
}

Deno.test("expectations and events of actions that did not land are withdrawn", async () => {
  const failed = await withFailedCreate(new KubeError(422, "Invalid", "bad pod", "create"));
  // Batches [node-0], [node-1, node-2]: node-1 fails, node-2 lands beside it.
  assertEquals(failed.results, ["done", "failed", "done"]);
  assertEquals(failed.expected, ["agent-node-0", "agent-node-2"]);
  assertEquals(failed.answered, 2);
  assertEquals(failed.events, ["agent-node-0", "agent-node-2"]);
});

Deno.test("a create whose answer was lost keeps its expectation: its pod may exist; no Event says it does", async () => {
  const lost = await withFailedCreate(
    new KubeError(503, "ServiceUnavailable", "no answer", "create"),
  );
  assertEquals(lost.results, ["done", "failed", "done"]);
  assertEquals(lost.expected, ["agent-node-0", "agent-node-1", "agent-node-2"]);
  assertEquals(lost.events, ["agent-node-0", "agent-node-2"]);
});

Deno.test("a status that only counts is written a second after the last write at the soonest; a decision at once", async () => {
  let at = Date.UTC(2026, 0, 1);
  let ready = 0;
  let reason = "Updating";
  await using h = harness({
    nodes: 1,
    deps: { clock: () => at },
    plan: (snapshot) => {
      const plan = onePodPerNode(snapshot);
      const conditions = [{
        type: "Complete",
        status: "False" as const,
        reason,
        message: `${ready}`,
      }];
      return { ...plan, status: { ...plan.status, numberReady: ready, conditions }, conditions };
    },
  });
  const stored = () =>
    h.api.objects.advanceddaemonsets.get("edge/agent")!.status as { numberReady: number };
  await h.request(path); // creates the pod: a claim
  await h.controller.queue.idle();
  const writes = () => h.api.writes.filter((w) => w === "update advanceddaemonsets/status").length;
  const before = writes();
  ready = 1;
  at += 200;
  const deferred = await (await h.request(path)).json();
  assertEquals([deferred.claimed, writes(), stored().numberReady], [false, before, 0]);
  assertEquals(deferred.requeueAfter > 0 && deferred.requeueAfter <= 1, true);
  // A decision (a condition's reason) is written at once, counts with it.
  reason = "Waiting";
  const decided = await (await h.request(path)).json();
  assertEquals([decided.claimed, writes(), stored().numberReady], [true, before + 1, 1]);
  // Counts alone again: held until a second after that write, then written.
  ready = 2;
  at += 500;
  assertEquals((await (await h.request(path)).json()).claimed, false);
  at += 600;
  assertEquals((await (await h.request(path)).json()).claimed, true);
  assertEquals([writes(), stored().numberReady], [before + 2, 2]);
});

Deno.test("an expectation seen met is forgotten in the status a second after the last write at the soonest", async () => {
  let at = Date.UTC(2026, 0, 1);
  // One condition throughout: what changes after the create is the expectation alone.
  const conditions = [{ type: "Progressing", status: "True" as const }];
  await using h = harness({
    nodes: 1,
    deps: { clock: () => at },
    plan: (snapshot) => {
      const plan = withExpectations(snapshot);
      return { ...plan, status: { ...plan.status, conditions }, conditions };
    },
  });
  const expected = () =>
    (h.api.objects.advanceddaemonsets.get("edge/agent")!.status as Plan["status"]).expectations
      ?.map((e) => e.pod);
  const created = await (await h.request(path)).json(); // creates the pod: a claim with its expectation
  await h.controller.queue.idle();
  assertEquals([created.claimed, expected()], [true, ["agent-node-0"]]);
  // The pod is there: the plan forgets the expectation, which waits like a count.
  at += 200;
  const held = await (await h.request(path)).json();
  assertEquals([held.claimed, expected()], [false, ["agent-node-0"]]);
  assertEquals(held.requeueAfter > 0 && held.requeueAfter <= 1, true);
  at += 900;
  assertEquals((await (await h.request(path)).json()).claimed, true);
  assertEquals(expected(), []);
});
