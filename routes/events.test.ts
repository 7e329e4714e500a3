import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { SnapshotCache } from "../kube/cache.ts";
import type { WatchFn } from "../kube/watcher.ts";
import { harness, podOfAgent } from "../tests/doubles/controller-harness.ts";

const pod = (name: string) => ({ apiVersion: "v1", kind: "Pod", ...podOfAgent(name) });

function binary(type: string, data: unknown, id = crypto.randomUUID()): RequestInit {
  return {
    headers: {
      "ce-specversion": "1.0",
      "ce-id": id,
      "ce-type": type,
      "ce-source": "https://10.96.0.1:443",
      "content-type": "application/json",
    },
    body: JSON.stringify(data),
  };
}

function structured(events: { type: string; data: unknown }[]): RequestInit {
  const body = events.map((e, i) => ({ specversion: "1.0", id: `e${i}`, source: "/relay", ...e }));
  return body.length === 1
    ? { headers: { "content-type": "application/cloudevents+json" }, body: JSON.stringify(body[0]) }
    : {
      headers: { "content-type": "application/cloudevents-batch+json" },
      body: JSON.stringify(body),
    };
}

const update = "dev.knative.apiserver.resource.update";

Deno.test("a binary pod event reconciles the set that owns the pod", async () => {
  await using h = harness({ nodes: 2 });
  const res = await h.request("/events", binary(update, pod("agent-x")));
  assertEquals(res.status, 202);
  const body = await res.json();
  assertEquals(body.events[0].keys, ["advanceddaemonsets/edge/agent"]);
  await h.controller.queue.idle();
  // The step the event asked for, and the one its pod writes ask for (which creates none).
  assertEquals(h.plans.length, 2);
  assertEquals(h.api.writes.filter((w) => w === "create pods").length, 2);
});

Deno.test("structured and batch events are read too; a set event maps to itself", async () => {
  await using h = harness();
  const ads = {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "agent", namespace: "edge" },
  };
  const one = await h.request("/events", structured([{ type: update, data: ads }]));
  assertEquals((await one.json()).events[0].keys, ["advanceddaemonsets/edge/agent"]);
  const batch = await h.request(
    "/events",
    structured([
      {
        type: "dev.knative.apiserver.ref.update",
        data: { kind: "AdvancedDaemonSet", namespace: "edge", name: "agent" },
      },
      {
        type: "dev.knative.apiserver.ref.delete",
        data: { apiVersion: "v1", kind: "Pod", namespace: "edge", name: "x" },
      },
    ]),
  );
  assertEquals((await batch.json()).events.map((e: { keys: string[] }) => e.keys), [
    ["advanceddaemonsets/edge/agent"],
    ["edge/*"],
  ]);
  await h.controller.queue.idle();
  assertEquals(h.plans.length >= 1, true);
});

Deno.test("a burst of pod events while their set reconciles becomes one more reconcile", async () => {
  const gate = Promise.withResolvers<void>();
  await using h = harness({
    nodes: 1,
    overrides: { getSet: (p, next) => gate.promise.then(() => next(p)) },
  });
  assertEquals((await h.request("/events", binary(update, pod("agent-0")))).status, 202);
  const responses = await Promise.all(
    Array.from(
      { length: 49 },
      (_, i) => h.request("/events", binary(update, pod(`agent-${i + 1}`))),
    ),
  );
  assertEquals(responses.every((r) => r.status === 202), true);
  gate.resolve();
  await h.controller.queue.idle();
  // 50 events and the first run's pod write ask; the run after it answers them all.
  assertEquals([h.controller.queue.requested, h.controller.queue.started], [51, 2]);
  assertEquals(h.plans.length, 2);
});

Deno.test("a node event fans out to every managed set; a heartbeat is dropped", async () => {
  await using h = harness({ nodes: 1 });
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "node-0", labels: { zone: "a" } },
    status: { conditions: [{ type: "Ready", status: "True" }] },
  };
  assertEquals((await (await h.request("/events", binary(update, node))).json()).events[0].keys, [
    "*",
  ]);
  await h.controller.queue.idle();
  // The fan-out's step, and the one its pod write asks for.
  assertEquals(h.plans.map((s) => s.set.metadata.name), ["agent", "agent"]);
  const heartbeat = { ...node, metadata: { ...node.metadata, resourceVersion: "99" } };
  assertEquals(
    (await (await h.request("/events", binary(update, heartbeat))).json()).events[0].keys,
    [],
  );
  const notReady = { ...node, status: { conditions: [{ type: "Ready", status: "False" }] } };
  assertEquals(
    (await (await h.request("/events", binary(update, notReady))).json()).events[0].keys,
    ["*"],
  );
});

Deno.test("an unknown event type answers 202 and does nothing", async () => {
  await using h = harness();
  const res = await h.request("/events", binary("com.example.something", { hello: 1 }));
  assertEquals(res.status, 202);
  const body = await res.json();
  assertEquals([body.accepted, body.events[0].keys], [false, []]);
  assertEquals(body.events[0].ignored.includes("com.example.something"), true);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, 0);
});

Deno.test("malformed events answer 400", async () => {
  await using h = harness();
  const notAnEvent = await h.request("/events", {
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assertEquals(notAnEvent.status, 400);
  const badData = await h.request("/events", binary(update, { kind: "Pod" }));
  assertEquals(badData.status, 400);
  const body = await badData.json();
  assertEquals(
    body.error.issues.some((i: { path: string[] }) => i.path.includes("metadata")),
    true,
  );
  const badJson = await h.request("/events", { ...binary(update, {}), body: "{not json" });
  assertEquals(badJson.status, 400);
  assertEquals(h.plans.length, 0);
});

Deno.test("a node change the relay reported first still reconciles once the cache has it", async () => {
  const watches = new Map<string, (type: string, object: unknown) => void>();
  const watch: WatchFn = (path, _query, onLine) => {
    watches.set(path, onLine);
    return Promise.resolve(new AbortController());
  };
  await using h = harness({
    nodes: 1,
    cache: (api) => new SnapshotCache({ api, watch, logger: memoryLogger() }),
  });
  assertEquals((await h.request("/reconcile/advanceddaemonsets/edge/agent")).status, 200);
  // The caches have listed and watch nodes and the set's pods.
  await eventually(
    "the caches watching",
    () => watches.has("/api/v1/nodes") && watches.has("/api/v1/namespaces/edge/pods"),
  );
  const notReady = {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "node-0", resourceVersion: "20" },
    status: { conditions: [{ type: "Ready", status: "False" }] },
  };
  // The relay is quicker than the controller's own watch: its reconcile reads a stale cache.
  await h.request("/events", binary(update, notReady));
  await h.controller.queue.idle();
  const before = h.plans.length;
  watches.get("/api/v1/nodes")!("MODIFIED", notReady);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, before + 1, "the cache's change calls a reconcile of its own");
  const ready = (n: { status?: unknown }) =>
    (n.status as { conditions?: { status: string }[] } | undefined)?.conditions?.[0]?.status;
  assertEquals(h.plans.at(-1)?.nodes.map(ready), ["False"]);
});

Deno.test("an event lacking specversion, id, source or type is a 400 naming what it lacks", async () => {
  await using h = harness();
  for (const lack of ["specversion", "id", "source", "type"]) {
    const event: Record<string, unknown> = {
      specversion: "1.0",
      id: "e1",
      source: "/relay",
      type: update,
      data: pod("agent-x"),
    };
    delete event[lack];
    for (
      const init of [
        {
          headers: { "content-type": "application/cloudevents+json" },
          body: JSON.stringify(event),
        },
        {
          headers: { "content-type": "application/cloudevents-batch+json" },
          body: JSON.stringify([event]),
        },
      ]
    ) {
      const res = await h.request("/events", init);
      assertEquals(res.status, 400, lack);
      assertEquals((await res.json()).error.message.includes(lack), true, lack);
    }
    const headers = binary(update, pod("agent-x")).headers as Record<string, string>;
    delete headers[`ce-${lack}`];
    const res = await h.request("/events", { headers, body: JSON.stringify(pod("agent-x")) });
    assertEquals(res.status, 400, `binary without ce-${lack}`);
    await res.body?.cancel();
  }
  assertEquals(h.plans.length, 0);
});

Deno.test("an event of another CloudEvents version than 1.0 is a 400 naming it, of a type read or not", async () => {
  await using h = harness();
  for (const type of [update, "com.example.other"]) {
    const event = { specversion: "0.9", id: "e1", source: "/relay", type, data: pod("agent-x") };
    const res = await h.request("/events", {
      headers: { "content-type": "application/cloudevents+json" },
      body: JSON.stringify(event),
    });
    assertEquals(res.status, 400, type);
    assertEquals(
      (await res.json()).error.message,
      'not a CloudEvent 1.0: event 0 has specversion "0.9"',
    );
    const headers = { ...binary(type, pod("agent-x")).headers as Record<string, string> };
    headers["ce-specversion"] = "0.9";
    const binaryRes = await h.request("/events", { headers, body: JSON.stringify(pod("agent-x")) });
    assertEquals(binaryRes.status, 400, `binary ${type}`);
    await binaryRes.body?.cancel();
  }
  assertEquals(h.plans.length, 0);
});

Deno.test("an event naming an object Kubernetes could not hold is ignored with the reason, never queued", async () => {
  await using h = harness();
  const bad = (namespace: string, name: string) => ({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { namespace, name },
  });
  const res = await h.request(
    "/events",
    structured([
      { type: update, data: bad("..", "..") },
      { type: update, data: bad("edge", "a..b") },
      {
        type: "dev.knative.apiserver.ref.update",
        data: { kind: "Pod", name: "p", namespace: "a.b" },
      },
    ]),
  );
  assertEquals(res.status, 202);
  const body = await res.json();
  assertEquals(body.accepted, false);
  assertEquals(body.events.map((e: { keys: string[] }) => e.keys), [[], [], []]);
  for (const e of body.events) assertEquals(/DNS-1123/.test(e.ignored), true, e.ignored);
  await h.controller.queue.idle();
  assertEquals(h.plans.length, 0, "nothing was queued");
});

Deno.test("bodies past the limit and batches past their cap answer 413, and nothing is queued", async () => {
  await using h = harness({ deps: { limits: { bodyBytes: 64 * 1024, events: 10 } } });
  const big = binary(update, { ...pod("agent-x"), padding: "x".repeat(100 * 1024) });
  for (const route of ["/events", "/tick", "/reconcile/advanceddaemonsets/edge/agent"]) {
    const res = await h.request(route, big);
    assertEquals(res.status, 413, route);
    assertEquals((await res.json()).error.reason, "PayloadTooLarge");
  }
  // A body that does not say its length is cut off at the limit as well.
  const chunks = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 100; i++) controller.enqueue(new TextEncoder().encode("x".repeat(1024)));
      controller.close();
    },
  });
  const streamed = await h.request("/events", { ...big, body: chunks });
  assertEquals(streamed.status, 413);
  await streamed.body?.cancel();
  const batch = await h.request(
    "/events",
    structured(Array.from({ length: 11 }, () => ({ type: update, data: pod("agent-x") }))),
  );
  assertEquals(batch.status, 413);
  assertEquals((await batch.json()).error.message, "a batch of 11 events exceeds 10");
  await h.controller.queue.idle();
  assertEquals(h.plans.length, 0, "nothing refused was queued");
  const fits = await h.request(
    "/events",
    structured(Array.from({ length: 10 }, () => ({ type: update, data: pod("agent-x") }))),
  );
  assertEquals(fits.status, 202);
  await fits.body?.cancel();
  await h.controller.queue.idle();
  assertEquals(h.plans.length > 0, true, "the batch that fits was");
});
