import { assertEquals, assertRejects, assertStringIncludes } from "@std/assert";
import { clientNodeApi, interceptApi, type Overrides } from "./api.ts";
import { claimTarget, KubeClient, type RequestRecord } from "./client.ts";
import { isConflict, KubeError } from "./errors.ts";
import { SnapshotCache } from "./cache.ts";
import type { KubeObject } from "./wire-objects.ts";
import type { WatchFn } from "./watcher.ts";
import { memoryApi } from "../tests/doubles/memory-api.ts";
import { memoryLogger } from "../lib/log.ts";
import { eventually } from "../lib/eventually.ts";
import { rolloutStatusAnnotation } from "../api/advanced-daemonset.ts";
import {
  type Answer,
  type RecordedRequest,
  startRecordingServer,
  statusAnswer,
} from "../tests/doubles/recording-server.ts";

const noWait = { attempts: 4, baseDelayMs: 1, maxDelayMs: 1, sleep: () => Promise.resolve() };

const set = {
  apiVersion: "apps.edgeroll.dev/v1alpha1",
  kind: "AdvancedDaemonSet",
  metadata: { namespace: "edge", name: "agent", uid: "set-uid", resourceVersion: "10" },
  spec: { selector: { matchLabels: { app: "agent" } } },
};

function list(items: unknown[], resourceVersion = "1"): Answer {
  return { body: { kind: "List", metadata: { resourceVersion }, items } };
}

/** A client on a recording server; `answer` decides each response. */
async function withClient(
  answer: (r: RecordedRequest) => Answer,
  run: (client: KubeClient, requests: RecordedRequest[], records: RequestRecord[]) => Promise<void>,
  overrides: Overrides = {},
) {
  const server = startRecordingServer(answer);
  const records: RequestRecord[] = [];
  try {
    const api = interceptApi(clientNodeApi(server.kubeConfig), overrides);
    const client = new KubeClient(api, { retry: noWait, onRequest: (r) => records.push(r) });
    await run(client, server.requests, records);
  } finally {
    await server.stop();
  }
}

Deno.test("readSnapshot reads set, pods, nodes and revisions in four requests", async () => {
  await withClient((r) => {
    if (r.path.endsWith("/advanceddaemonsets/agent")) return { body: set };
    if (r.path.endsWith("/pods")) return list([{ metadata: { name: "agent-a" } }]);
    if (r.path === "/api/v1/nodes") {
      return list([{ metadata: { name: "n1" } }, { metadata: { name: "n2" } }]);
    }
    return list([]);
  }, async (client, requests) => {
    const snapshot = await client.readSnapshot({
      kind: "advanceddaemonsets",
      namespace: "edge",
      name: "agent",
    });
    assertEquals(snapshot?.set.metadata.uid, "set-uid");
    assertEquals(snapshot?.pods.map((p) => p.metadata.name), ["agent-a"]);
    assertEquals(snapshot?.nodes.length, 2);
    assertEquals(requests.length, 4);
    const selectors = requests.filter((r) => r.query.has("labelSelector")).map((r) =>
      r.query.get("labelSelector")
    );
    assertEquals(selectors, ["app=agent", "app=agent"]);
  });
});

Deno.test("readSnapshot of an in-place set asks discovery for pods/resize, once per client", async () => {
  const inPlace = {
    ...set,
    spec: {
      ...set.spec,
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { rollingUpdateType: "InPlaceIfPossible" },
      },
    },
  };
  const answer = (resources: string[]) => (r: RecordedRequest): Answer => {
    if (r.path.endsWith("/advanceddaemonsets/agent")) return { body: inPlace };
    if (r.path === "/api/v1") return { body: { resources: resources.map((name) => ({ name })) } };
    return list([]);
  };
  const ref = { kind: "advanceddaemonsets" as const, namespace: "edge", name: "agent" };
  await withClient(answer(["pods", "pods/resize"]), async (client, requests) => {
    const snapshot = await client.readSnapshot(ref);
    assertEquals(snapshot?.noPodResize, undefined, "the server serves pods/resize");
    assertEquals(requests.map((r) => r.path).filter((p) => p === "/api/v1"), ["/api/v1"]);
    assertEquals(requests.length, 5);
    await client.readSnapshot(ref);
    assertEquals(requests.length, 9, "discovery asked once (ADR 0056)");
  });
  await withClient(answer(["pods"]), async (client) => {
    const snapshot = await client.readSnapshot(ref);
    assertEquals(snapshot?.noPodResize, true, "a server before 1.32: resources recreate");
  });
});

Deno.test("readSnapshot of a missing set is undefined after one request", async () => {
  await withClient(() => statusAnswer(404, "NotFound"), async (client, requests) => {
    assertEquals(
      await client.readSnapshot({ kind: "daemonsets", namespace: "edge", name: "gone" }),
      undefined,
    );
    assertEquals(requests.length, 1);
  });
});

Deno.test("a 500 then success is retried; each try is counted", async () => {
  let failures = 1;
  await withClient(
    () => failures-- > 0 ? statusAnswer(500, "InternalError") : list([]),
    async (client, requests, records) => {
      await client.api.listNodes({});
      assertEquals(requests.length, 2);
      assertEquals(records.map((r) => `${r.verb}:${r.status}`), ["list:500", "list:200"]);
    },
  );
});

Deno.test("retries are bounded: a lasting 429 fails after the policy's attempts", async () => {
  await withClient(() => statusAnswer(429, "TooManyRequests"), async (client, requests) => {
    const err = await assertRejects(() => client.api.listNodes({}), KubeError);
    assertEquals([err.status, err.reason, err.retryable], [429, "TooManyRequests", true]);
    assertEquals(requests.length, noWait.attempts);
  });
});

Deno.test("a terminal error is not retried", async () => {
  await withClient(() => statusAnswer(403, "Forbidden", "no"), async (client, requests) => {
    const err = await assertRejects(() => client.api.listNodes({}), KubeError);
    assertEquals([err.status, err.reason, err.terminal], [403, "Forbidden", true]);
    assertEquals(requests.length, 1);
  });
});

Deno.test("a create that finds the object there counts as done", async () => {
  await withClient(() => statusAnswer(409, "AlreadyExists"), async (client) => {
    assertEquals(await client.createPod("edge", { metadata: { name: "agent-a" } }), "existed");
    assertEquals(
      await client.createRevision("edge", { metadata: { name: "agent-r1" } }),
      "existed",
    );
  });
});

Deno.test("a create lost to a 503 and retried into AlreadyExists is one create", async () => {
  let tries = 0;
  await withClient(
    () =>
      ++tries === 1 ? statusAnswer(503, "ServiceUnavailable") : statusAnswer(409, "AlreadyExists"),
    async (client, requests) => {
      assertEquals(await client.createPod("edge", { metadata: { name: "agent-a" } }), "existed");
      assertEquals(requests.length, 2);
    },
  );
});

Deno.test("a delete sends the UID precondition; gone or replaced pods count as done", async () => {
  const answers = [
    statusAnswer(404, "NotFound"),
    statusAnswer(409, "Conflict", "Precondition failed: UID"),
  ];
  await withClient(() => answers.shift() ?? { body: {} }, async (client, requests) => {
    assertEquals(await client.deletePod("edge", "agent-a", "uid-a"), "gone");
    assertEquals(await client.deletePod("edge", "agent-a", "uid-a"), "gone");
    assertEquals(await client.deletePod("edge", "agent-a", "uid-a"), "deleted");
    assertEquals(requests.map((r) => r.body), Array(3).fill({ preconditions: { uid: "uid-a" } }));
  });
});

Deno.test("claimStatus PUTs the status with the read resourceVersion; 409 is a conflict", async () => {
  await withClient(
    () => statusAnswer(409, "Conflict", "the object has been modified"),
    async (client, requests) => {
      const err = await assertRejects(() =>
        client.claimStatus("advanceddaemonsets", { set }, { observedGeneration: 1 })
      );
      assertEquals(isConflict(err), true);
      assertEquals(requests.length, 1, "a conflict is the caller's to handle, never retried");
      const sent = requests[0].body as typeof set & { status: unknown };
      assertEquals([sent.metadata.resourceVersion, sent.status], ["10", { observedGeneration: 1 }]);
    },
  );
});

const rolloutStatuses = "/apis/apps.edgeroll.dev/v1alpha1/namespaces/edge/rolloutstatuses";
const yurt = {
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { namespace: "edge", name: "yurt", uid: "ds-uid", resourceVersion: "5" },
};

Deno.test("claimStatus of a plain DaemonSet creates its RolloutStatus, owned by it, then PUTs it under its resourceVersion; the DaemonSet is not written", async () => {
  await withClient(
    (r) => ({
      body: {
        ...(r.body as object),
        metadata: { ...(r.body as KubeObject).metadata, resourceVersion: "7" },
      },
    }),
    async (client, requests) => {
      const first = await client.claimStatus("daemonsets", { set: yurt }, {
        observedGeneration: 1,
      });
      assertEquals([requests[0].method, requests[0].path], ["POST", rolloutStatuses]);
      assertEquals(requests[0].body, {
        apiVersion: "apps.edgeroll.dev/v1alpha1",
        kind: "RolloutStatus",
        metadata: {
          namespace: "edge",
          name: "yurt",
          labels: { "app.kubernetes.io/managed-by": "edgeroll" },
          ownerReferences: [{
            apiVersion: "apps/v1",
            kind: "DaemonSet",
            name: "yurt",
            uid: "ds-uid",
          }],
        },
        status: { observedGeneration: 1 },
      });
      assertEquals(first.set, yurt);
      await client.claimStatus("daemonsets", first, { observedGeneration: 2 });
      assertEquals([requests[1].method, requests[1].path], ["PUT", `${rolloutStatuses}/yurt`]);
      const sent = requests[1].body as KubeObject & { status: unknown };
      assertEquals([sent.metadata.resourceVersion, sent.status], ["7", { observedGeneration: 2 }]);
      assertEquals(requests.length, 2);
    },
  );
});

Deno.test("a RolloutStatus claim is lost to a 409 on PUT, AlreadyExists on create and 404 on PUT (its DaemonSet recreated)", async () => {
  const existing = { metadata: { namespace: "edge", name: "yurt", resourceVersion: "7" } };
  for (
    const [answer, target] of [
      [statusAnswer(409, "Conflict", "the object has been modified"), {
        set: yurt,
        rolloutStatus: existing,
      }],
      [statusAnswer(409, "AlreadyExists", "rolloutstatuses yurt already exists"), { set: yurt }],
      [statusAnswer(404, "NotFound", "rolloutstatuses yurt not found"), {
        set: yurt,
        rolloutStatus: existing,
      }],
    ] as const
  ) {
    await withClient(() => answer, async (client, requests) => {
      const err = await assertRejects(() => client.claimStatus("daemonsets", target, {}));
      assertEquals(isConflict(err), true, String(err));
      assertEquals(requests.length, 1);
    });
  }
});

Deno.test("the first claim of a DaemonSet with an earlier edgeroll's status annotation removes it; reads use the annotation until then", async () => {
  const legacy = {
    ...yurt,
    metadata: {
      ...yurt.metadata,
      annotations: { [rolloutStatusAnnotation]: '{"nextCheckAt":"2026-01-01T00:00:00Z"}' },
    },
  };
  await withClient((r) => {
    if (r.method === "GET" && r.path.endsWith("/rolloutstatuses/yurt")) {
      return {
        status: 404,
        body: {
          kind: "Status",
          code: 404,
          reason: "NotFound",
          details: { name: "yurt", kind: "rolloutstatuses" },
        },
      };
    }
    if (r.method === "GET") return { body: legacy };
    return { body: r.body };
  }, async (client, requests) => {
    const ref = { kind: "daemonsets" as const, namespace: "edge", name: "yurt" };
    assertEquals(await client.writtenStatusOf(ref, legacy), {
      nextCheckAt: "2026-01-01T00:00:00Z",
    });
    await client.claimStatus("daemonsets", { set: legacy }, { observedGeneration: 1 });
    const writes = requests.filter((r) => r.method !== "GET");
    assertEquals(writes.map((r) => `${r.method} ${r.path}`), [
      `POST ${rolloutStatuses}`,
      "PATCH /apis/apps/v1/namespaces/edge/daemonsets/yurt",
    ]);
    assertEquals(writes[1].body, {
      metadata: { annotations: { [rolloutStatusAnnotation]: null } },
    });
  });
});

Deno.test("a RolloutStatus read that finds none is no status; a 404 that names no object (no CRD) is thrown with its path", async () => {
  const ref = { kind: "daemonsets" as const, namespace: "edge", name: "yurt" };
  await withClient(
    () => ({
      status: 404,
      body: { kind: "Status", code: 404, reason: "NotFound", details: { name: "yurt" } },
    }),
    async (client) => assertEquals(await client.writtenStatusOf(ref, yurt), undefined),
  );
  await withClient(
    () => statusAnswer(404, "NotFound", "the server could not find the requested resource"),
    async (client) => {
      const err = await assertRejects(() => client.writtenStatusOf(ref, yurt), KubeError);
      assertStringIncludes(err.message, "rolloutstatuses/yurt");
    },
  );
});

Deno.test("setPodCondition sends one condition by strategic merge; recordEvent names the set", async () => {
  await withClient(() => ({ body: {} }), async (client, requests) => {
    const now = new Date("2026-03-04T05:06:07.890Z");
    await client.setPodCondition("edge", "agent-a", {
      type: "PodNeedUpgrade",
      status: "True",
      message: "controllerrevision: abc",
    }, now);
    await client.recordEvent(
      set,
      { type: "Normal", reason: "PodsCreated", message: "created 3" },
      now,
    );
    assertEquals(requests[0].body, {
      status: {
        conditions: [{
          type: "PodNeedUpgrade",
          status: "True",
          message: "controllerrevision: abc",
          lastTransitionTime: "2026-03-04T05:06:07Z",
        }],
      },
    });
    const event = requests[1].body as Record<string, unknown>;
    assertEquals(requests[1].path, "/api/v1/namespaces/edge/events");
    assertEquals(event.reason, "PodsCreated");
    assertEquals((event.involvedObject as { uid: string; kind: string }).uid, "set-uid");
    assertEquals((event.involvedObject as { uid: string; kind: string }).kind, "AdvancedDaemonSet");
  });
});

Deno.test("no answer at all is a retryable KubeError with status 0", async () => {
  const server = startRecordingServer(() => list([]));
  await server.stop();
  const client = new KubeClient(clientNodeApi(server.kubeConfig), {
    retry: { ...noWait, attempts: 2 },
  });
  const err = await assertRejects(() => client.ping(), KubeError);
  assertEquals([err.status, err.reason, err.retryable], [0, "Unreachable", true]);
});

const discovery = (groups: string[]): Answer => ({
  body: {
    kind: "APIGroupList",
    groups: groups.map((gv) => ({
      name: gv.split("/")[0],
      versions: [{ groupVersion: gv, version: gv.split("/")[1] }],
    })),
  },
});

Deno.test("servedSetKinds: AdvancedDaemonSets are served when discovery lists their group version", async () => {
  const changes: string[][] = [];
  let groups = ["apps/v1"];
  const server = startRecordingServer(() => discovery(groups));
  try {
    const client = new KubeClient(clientNodeApi(server.kubeConfig), {
      retry: noWait,
      onServedChange: (served) => changes.push(served),
    });
    assertEquals(await client.servedSetKinds(), ["daemonsets"]);
    assertEquals(await client.servedSetKinds(), ["daemonsets"]);
    // Another version of the group is not ours.
    groups = ["apps/v1", "apps.edgeroll.dev/v1beta9"];
    assertEquals(await client.servedSetKinds(), ["daemonsets"]);
    groups = ["apps/v1", "apps.edgeroll.dev/v1alpha1"];
    assertEquals(await client.servedSetKinds(), ["advanceddaemonsets", "daemonsets"]);
    assertEquals(server.requests.map((r) => `${r.method} ${r.path}`), Array(4).fill("GET /apis"));
    // Said once, and again only when it changed.
    assertEquals(changes, [["daemonsets"], ["advanceddaemonsets", "daemonsets"]]);
  } finally {
    await server.stop();
  }
});

Deno.test("listSets: a 404 is an error naming the path, never an empty list", async () => {
  await withClient(() => statusAnswer(404, "NotFound"), async (client) => {
    for (const kind of ["advanceddaemonsets", "daemonsets"] as const) {
      const err = await assertRejects(() => client.listSets(kind), KubeError);
      assertEquals(err.status, 404);
      assertStringIncludes(
        err.message,
        kind === "daemonsets"
          ? "GET /apis/apps/v1/daemonsets"
          : "GET /apis/apps.edgeroll.dev/v1alpha1/advanceddaemonsets",
      );
    }
  });
});

Deno.test("readSnapshot reads the set from the cache until our own write is newer than its copy", async () => {
  const api = memoryApi();
  api.put("advanceddaemonsets", {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "agent", namespace: "edge" },
    spec: { selector: { matchLabels: { app: "agent" } } },
  });
  const gets: string[] = [];
  const counted = interceptApi(api, {
    getSet: (ref, next) => {
      gets.push(ref.name);
      return next(ref);
    },
  });
  // Watches that list and then say nothing: the cache's copy stays as listed.
  const watch: WatchFn = () => Promise.resolve(new AbortController());
  const client = new KubeClient(counted, {
    cache: (metered) => new SnapshotCache({ api: metered, watch, logger: memoryLogger() }),
  });
  const ref = { kind: "advanceddaemonsets" as const, namespace: "edge", name: "agent" };
  try {
    await client.servedSetKinds();
    const listed = await eventually("the set cached", () => client.cache!.set(ref));
    const first = await client.readSnapshot(ref);
    assertEquals([gets.length, first?.set.metadata.resourceVersion], [
      0,
      listed.metadata.resourceVersion,
    ]);
    await client.claimStatus("advanceddaemonsets", { set: first!.set as KubeObject }, {
      observedGeneration: 1,
    });
    const second = await client.readSnapshot(ref);
    assertEquals(gets, ["agent"], "the copy is older than our claim: a GET");
    assertEquals(second?.set.status, { observedGeneration: 1 });
    await client.readSnapshot(ref, { fresh: true });
    assertEquals(gets.length, 2, "fresh: a GET whatever the cache has");
  } finally {
    await client.cache!.close();
  }
});

Deno.test("a plain DaemonSet read from the cache comes with the RolloutStatus of our last claim; fresh, or after a lost claim, a GET", async () => {
  const api = memoryApi();
  const daemonSet = api.put("daemonsets", {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "yurt",
      namespace: "edge",
      annotations: { "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate" },
    },
    spec: { selector: { matchLabels: { app: "yurt" } } },
  });
  const gets: string[] = [];
  const counted = interceptApi(api, {
    getRolloutStatus: (p, next) => {
      gets.push(p.name);
      return next(p);
    },
  });
  const watch: WatchFn = () => Promise.resolve(new AbortController());
  const client = new KubeClient(counted, {
    cache: (metered) => new SnapshotCache({ api: metered, watch, logger: memoryLogger() }),
  });
  const ref = { kind: "daemonsets" as const, namespace: "edge", name: "yurt" };
  const writtenGeneration = (s: Awaited<ReturnType<typeof client.readSnapshot>>) =>
    ((s?.kind === "DaemonSet" ? s.rolloutStatus?.status : undefined) as
      | { observedGeneration?: number }
      | undefined)?.observedGeneration;
  try {
    await client.servedSetKinds();
    await eventually("the set cached", () => client.cache!.set(ref));
    const first = await client.readSnapshot(ref);
    assertEquals([gets.length, writtenGeneration(first)], [1, undefined], "none yet: one GET");
    const claimed = await client.claimStatus("daemonsets", { set: daemonSet }, {
      observedGeneration: 1,
    });
    assertEquals(writtenGeneration(await client.readSnapshot(ref)), 1);
    assertEquals(gets.length, 1, "our own claim's copy: no GET");
    // Another replica claims meantime: ours, under the old resourceVersion, is lost.
    await api.replaceRolloutStatus({
      namespace: "edge",
      name: "yurt",
      body: { ...claimed.rolloutStatus!, status: { observedGeneration: 2 } },
    });
    const stale = await client.readSnapshot(ref);
    assertEquals(writtenGeneration(stale), 1);
    const lost = await assertRejects(() =>
      client.claimStatus("daemonsets", claimTarget(stale!), { observedGeneration: 3 })
    );
    assertEquals(isConflict(lost), true);
    assertEquals(writtenGeneration(await client.readSnapshot(ref, { fresh: true })), 2);
    assertEquals(writtenGeneration(await client.readSnapshot(ref)), 2, "read afresh");
    assertEquals(gets.length, 3);
  } finally {
    await client.cache!.close();
  }
});
