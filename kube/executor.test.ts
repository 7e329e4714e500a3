import { assertEquals } from "@std/assert";
import { clientNodeApi } from "./api.ts";
import { KubeClient } from "./client.ts";
import { memoryApi } from "../tests/doubles/memory-api.ts";
import { executeActions } from "./executor.ts";
import {
  type Answer,
  type RecordedRequest,
  startRecordingServer,
  statusAnswer,
} from "../tests/doubles/recording-server.ts";
import type { Action, CreatePod } from "../api/plan.ts";

const now = new Date("2026-05-06T07:08:09Z");
const noRetry = { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 };

function createPod(name: string): CreatePod {
  return {
    type: "createPod",
    reason: "node has no pod",
    node: `node-${name}`,
    revision: "r1",
    pod: { metadata: { name }, spec: { containers: [{ name: "c" }] } },
  };
}

async function execute(actions: Action[], burst: number, answer: (r: RecordedRequest) => Answer) {
  const server = startRecordingServer(answer);
  try {
    const client = new KubeClient(clientNodeApi(server.kubeConfig), { retry: noRetry });
    const outcomes = await executeActions(
      client,
      { kind: "advanceddaemonsets", namespace: "edge", name: "agent" },
      actions,
      { burst, now },
    );
    return { outcomes, requests: server.requests };
  } finally {
    await server.stop();
  }
}

Deno.test("at most burst actions are sent; the rest are skipped", async () => {
  const actions = Array.from({ length: 10 }, (_, i) => createPod(`p${i}`));
  const { outcomes, requests } = await execute(actions, 6, () => ({ body: {} }));
  assertEquals(requests.length, 6);
  assertEquals(outcomes.map((o) => o.result), [
    ...Array(6).fill("done"),
    ...Array(4).fill("skipped"),
  ]);
});

Deno.test("slow start: a failed creation skips the creations after its batch", async () => {
  const actions = Array.from({ length: 10 }, (_, i) => createPod(`p${i}`));
  const { outcomes, requests } = await execute(actions, 250, (r) => {
    const name = (r.body as { metadata: { name: string } }).metadata.name;
    return name === "p1" ? statusAnswer(500, "InternalError") : { body: {} };
  });
  // Batches are [p0], [p1, p2], [p3..p6]: the second fails, so the third is never sent.
  assertEquals(requests.length, 3);
  assertEquals(outcomes.slice(0, 4).map((o) => o.result), ["done", "failed", "done", "skipped"]);
  assertEquals(outcomes[1].error?.status, 500);
});

const deletePod = (name: string): Action => ({
  type: "deletePod",
  reason: "old revision",
  name,
  uid: `u-${name}`,
});

Deno.test("deletions go all at once, as upstream's: a failed one or a failed creation stops none", async () => {
  const actions = [
    createPod("c0"),
    ...Array.from({ length: 8 }, (_, i) => deletePod(`d${i}`)),
  ];
  const { outcomes, requests } = await execute(
    actions,
    250,
    (r) =>
      r.method === "POST" || r.path.endsWith("/d3")
        ? statusAnswer(500, "InternalError")
        : { body: {} },
  );
  assertEquals(requests.length, 9);
  assertEquals(outcomes.map((o) => o.result), [
    "failed",
    ...Array(3).fill("done"),
    "failed",
    ...Array(4).fill("done"),
  ]);
});

Deno.test("a failed revision write stops the run: the pods name their revision", async () => {
  const actions: Action[] = [
    {
      type: "createRevision",
      reason: "new template",
      revisionObject: { metadata: { name: "r2" }, revision: 2 },
    },
    createPod("c0"),
    deletePod("d0"),
  ];
  const { outcomes, requests } = await execute(
    actions,
    250,
    (r) =>
      r.path.includes("controllerrevisions") ? statusAnswer(500, "InternalError") : { body: {} },
  );
  assertEquals(requests.length, 1);
  assertEquals(outcomes.map((o) => o.result), ["failed", "skipped", "skipped"]);
});

Deno.test("AlreadyExists and gone count as already done, not as failures", async () => {
  const actions: Action[] = [
    createPod("p0"),
    { type: "deletePod", reason: "old revision", name: "p9", uid: "u9" },
  ];
  const { outcomes } = await execute(
    actions,
    250,
    (r) => r.method === "POST" ? statusAnswer(409, "AlreadyExists") : statusAnswer(404, "NotFound"),
  );
  assertEquals(outcomes.map((o) => o.result), ["alreadyDone", "alreadyDone"]);
});

Deno.test("each action type becomes its request", async () => {
  const actions: Action[] = [
    {
      type: "createRevision",
      reason: "new template",
      revisionObject: { metadata: { name: "ads-r2" }, revision: 2 },
    },
    createPod("p0"),
    { type: "deletePod", reason: "old revision", name: "p1", uid: "u1" },
    {
      type: "patchPod",
      reason: "adopt",
      name: "p2",
      uid: "u2",
      patch: { metadata: { labels: { a: "b" } } },
    },
    {
      type: "setPodCondition",
      reason: "OTA",
      name: "p3",
      uid: "u3",
      condition: { type: "PodNeedUpgrade", status: "True", message: "controllerrevision: r2" },
    },
    { type: "patchRevision", reason: "bump", name: "ads-r1", uid: "ur", patch: { revision: 3 } },
    { type: "deleteRevision", reason: "history limit", name: "ads-r0", uid: "ur0" },
  ];
  const { outcomes, requests } = await execute(actions, 250, () => ({ body: {} }));
  assertEquals(outcomes.every((o) => o.result === "done"), true);
  const seen = requests.map((r) => `${r.method} ${r.path}`).sort();
  assertEquals(seen, [
    "DELETE /api/v1/namespaces/edge/pods/p1",
    "DELETE /apis/apps/v1/namespaces/edge/controllerrevisions/ads-r0",
    "PATCH /api/v1/namespaces/edge/pods/p2",
    "PATCH /api/v1/namespaces/edge/pods/p3/status",
    "PATCH /apis/apps/v1/namespaces/edge/controllerrevisions/ads-r1",
    "POST /api/v1/namespaces/edge/pods",
    "POST /apis/apps/v1/namespaces/edge/controllerrevisions",
  ]);
  const patch = requests.find((r) => r.path.endsWith("/pods/p2"))?.body;
  assertEquals(patch, { metadata: { labels: { a: "b" }, uid: "u2" } });
  const condition = requests.find((r) => r.path.endsWith("/status"))?.body;
  assertEquals(condition, {
    status: {
      conditions: [{
        type: "PodNeedUpgrade",
        status: "True",
        message: "controllerrevision: r2",
        lastTransitionTime: "2026-05-06T07:08:09Z",
      }],
    },
  });
});

Deno.test("an in-place update that resizes: pods/resize first, the patch only once it landed", async () => {
  const update = (name: string): Action => ({
    type: "patchPod",
    reason: "update, in place: cpu of agent",
    name,
    uid: `u-${name}`,
    resize: [{ name: "agent", resources: { requests: { cpu: "150m" }, limits: { cpu: "300m" } } }],
    patch: { metadata: { labels: { "controller-revision-hash": "r2" } } },
  });
  const { outcomes, requests } = await execute(
    [update("p0"), update("p1")],
    250,
    (r) => r.path.endsWith("/p1/resize") ? statusAnswer(422, "Invalid") : { body: {} },
  );
  assertEquals(outcomes.map((o) => o.result), ["done", "failed"]);
  // p0: resized, then patched; p1: its resize refused, its patch never sent.
  assertEquals(requests.map((r) => `${r.method} ${r.path}`).sort(), [
    "PATCH /api/v1/namespaces/edge/pods/p0",
    "PATCH /api/v1/namespaces/edge/pods/p0/resize",
    "PATCH /api/v1/namespaces/edge/pods/p1/resize",
  ]);
  const p0 = requests.filter((r) => r.path.includes("/p0"));
  assertEquals(p0.map((r) => r.path.endsWith("/resize")), [true, false], "resize first");
  assertEquals(p0[0].contentType, "application/strategic-merge-patch+json");
  assertEquals(p0[0].body, {
    spec: {
      containers: [{
        name: "agent",
        resources: { requests: { cpu: "150m" }, limits: { cpu: "300m" } },
      }],
    },
  });
});

Deno.test("a batch of creations and the deletions go at most 32 at a time, all of them sent", async () => {
  const api = memoryApi();
  let inFlight = 0;
  let most = 0;
  const counted = <T>(call: () => Promise<T>) => async () => {
    most = Math.max(most, ++inFlight);
    await new Promise((resolve) => setTimeout(resolve, 2));
    inFlight--;
    return await call();
  };
  const client = new KubeClient({
    ...api,
    createPod: (p) => counted(() => api.createPod(p))(),
    deletePod: () => counted(() => Promise.resolve())(),
  }, { retry: noRetry });
  const actions: Action[] = [
    ...Array.from({ length: 100 }, (_, i) => deletePod(`old${i}`)),
    ...Array.from({ length: 100 }, (_, i) => createPod(`p${i}`)),
  ];
  const outcomes = await executeActions(
    client,
    { kind: "advanceddaemonsets", namespace: "edge", name: "agent" },
    actions,
    // Batches of 1, 2, 4, …, 64: the last of them is more than 32.
    { burst: 250, now },
  );
  assertEquals(outcomes.filter((o) => o.result === "done").length, 200);
  assertEquals(most, 32);
});
