import { assertEquals, assertRejects, assertStringIncludes } from "@std/assert";
import { clientNodeApi, interceptApi, kubeWatch } from "./api.ts";
import { type KubeObject, podAsCached, podCachedForm } from "./wire-objects.ts";
import { KubeError } from "./errors.ts";
import {
  type Answer,
  startRecordingServer,
  statusAnswer,
} from "../tests/doubles/recording-server.ts";

const emptyList: Answer = { body: { kind: "List", metadata: { resourceVersion: "7" }, items: [] } };

Deno.test("clientNodeApi sends each call to the right path with the right content type", async () => {
  const server = startRecordingServer((r) => r.method === "GET" ? emptyList : { body: {} });
  try {
    const api = clientNodeApi(server.kubeConfig);
    await api.listPods({ namespace: "edge", labelSelector: "app=agent" });
    await api.patchPod({
      namespace: "edge",
      name: "p",
      patch: { metadata: { labels: { a: "b" } } },
    });
    await api.patchPodStatus({ namespace: "edge", name: "p", patch: { status: {} } });
    await api.deletePod({ namespace: "edge", name: "p", uid: "u-1" });
    await api.replaceSetStatus({
      kind: "advanceddaemonsets",
      object: { metadata: { namespace: "edge", name: "ads", resourceVersion: "3" }, status: {} },
    });
    await api.patchSet({ kind: "daemonsets", namespace: "edge", name: "ds", patch: {} });
    const seen = server.requests.map((r) => `${r.method} ${r.path} ${r.contentType ?? "-"}`);
    assertEquals(seen, [
      "GET /api/v1/namespaces/edge/pods -",
      "PATCH /api/v1/namespaces/edge/pods/p application/merge-patch+json",
      "PATCH /api/v1/namespaces/edge/pods/p/status application/strategic-merge-patch+json",
      "DELETE /api/v1/namespaces/edge/pods/p application/json",
      "PUT /apis/apps.edgeroll.dev/v1alpha1/namespaces/edge/advanceddaemonsets/ads/status application/json",
      "PATCH /apis/apps/v1/namespaces/edge/daemonsets/ds application/merge-patch+json",
    ]);
    assertEquals(server.requests[0].query.get("labelSelector"), "app=agent");
    assertEquals(server.requests[3].body, { preconditions: { uid: "u-1" } });
    assertEquals(server.requests[0].authorization, "Bearer test-token");
  } finally {
    await server.stop();
  }
});

Deno.test("clientNodeApi lists a node's pods in every namespace and reads one pod", async () => {
  const server = startRecordingServer((r) =>
    r.path.endsWith("/pods") ? emptyList : { body: { metadata: { name: "p" } } }
  );
  try {
    const api = clientNodeApi(server.kubeConfig);
    await api.listPods({ nodeName: "edge-1" });
    await api.listPods({ namespace: "edge", labelSelector: "app=a", nodeName: "edge-2" });
    assertEquals((await api.getPod({ namespace: "edge", name: "p" })).metadata.name, "p");
    assertEquals(server.requests.map((r) => `${r.method} ${r.path}`), [
      "GET /api/v1/pods",
      "GET /api/v1/namespaces/edge/pods",
      "GET /api/v1/namespaces/edge/pods/p",
    ]);
    assertEquals(server.requests[0].query.get("fieldSelector"), "spec.nodeName=edge-1");
    assertEquals(server.requests[0].query.get("labelSelector"), null);
    assertEquals(
      [
        server.requests[1].query.get("labelSelector"),
        server.requests[1].query.get("fieldSelector"),
      ],
      ["app=a", "spec.nodeName=edge-2"],
    );
  } finally {
    await server.stop();
  }
});

Deno.test("clientNodeApi returns lists in wire form with their resourceVersion", async () => {
  const server = startRecordingServer(() => ({
    body: {
      kind: "PodList",
      metadata: { resourceVersion: "42" },
      items: [{ metadata: { name: "a", creationTimestamp: "2026-01-02T03:04:05Z" } }],
    },
  }));
  try {
    const pods = await clientNodeApi(server.kubeConfig).listPods({ namespace: "edge" });
    assertEquals(pods.resourceVersion, "42");
    assertEquals(typeof pods.items[0].metadata.creationTimestamp, "string");
    assertEquals(
      Date.parse(pods.items[0].metadata.creationTimestamp!),
      Date.parse("2026-01-02T03:04:05Z"),
    );
  } finally {
    await server.stop();
  }
});

Deno.test("clientNodeApi reads a list as it arrives, keeping of each item what it is asked", async () => {
  const list = {
    kind: "NodeList",
    metadata: { resourceVersion: "51" },
    items: ["n1", "n2", "n3"].map((name) => ({
      metadata: { name, managedFields: [{ manager: "kubelet" }] },
    })),
  };
  const text = JSON.stringify(list);
  // Cut through names and braces alike; the last answer ends inside the third item.
  const cuts = (body: string) =>
    Array.from({ length: Math.ceil(body.length / 17) }, (_, i) => body.slice(i * 17, i * 17 + 17));
  let served = 0;
  const server = startRecordingServer(() => ({
    body: undefined,
    chunks: served++ === 0 ? cuts(text) : cuts(text.slice(0, text.lastIndexOf("{"))),
  }));
  try {
    const api = clientNodeApi(server.kubeConfig);
    const kept = await api.listNodes({
      form: { keep: (n) => ({ metadata: { name: n.metadata.name } }), view: true },
    });
    assertEquals(kept, {
      resourceVersion: "51",
      items: ["n1", "n2", "n3"].map((name) => ({ metadata: { name } })),
    });
    const cut = await assertRejects(() => api.listNodes({}), KubeError);
    assertEquals([cut.status, cut.operation], [0, "GET /api/v1/nodes"]);
    assertStringIncludes(cut.message, "the list ended inside its JSON (2 items read)");
  } finally {
    await server.stop();
  }
});

Deno.test("interceptApi replaces only the overridden method and can call through", async () => {
  const server = startRecordingServer(() => emptyList);
  try {
    const calls: string[] = [];
    const api = interceptApi(clientNodeApi(server.kubeConfig), {
      listNodes: async (param, next) => {
        calls.push("listNodes");
        const real = await next(param);
        return { ...real, resourceVersion: `intercepted-${real.resourceVersion}` };
      },
      createPod: () => Promise.reject(new KubeError(500, "InternalError", "injected", "create")),
    });
    assertEquals((await api.listNodes({})).resourceVersion, "intercepted-7");
    assertEquals((await api.listRevisions({ namespace: "x" })).resourceVersion, "7");
    const err = await api.createPod({ namespace: "x", body: { metadata: {} } }).catch((e) => e);
    assertEquals(err instanceof KubeError && err.status, 500);
    assertEquals(calls, ["listNodes"]);
    assertEquals(server.requests.length, 2, "the overridden create never reached the server");
  } finally {
    await server.stop();
  }
});

Deno.test("an API error keeps its HTTP status and Status reason", async () => {
  const server = startRecordingServer(() => statusAnswer(409, "AlreadyExists"));
  try {
    const err = await clientNodeApi(server.kubeConfig)
      .createPod({ namespace: "x", body: { metadata: { name: "p" } } })
      .catch((e) => e);
    assertEquals(err instanceof KubeError, true);
    assertEquals([err.status, err.reason, err.operation], [
      409,
      "AlreadyExists",
      "POST /api/v1/namespaces/x/pods",
    ]);
  } finally {
    await server.stop();
  }
});

/** kube-apiserver's own answers (api/testdata/protobuf), served in pieces by a recording server. */
const apiserverFixture = (name: string) =>
  Deno.readFileSync(new URL(`../api/testdata/protobuf/${name}`, import.meta.url));
const piecesOf = (bytes: Uint8Array, size: number) =>
  Array.from(
    { length: Math.ceil(bytes.length / size) },
    (_, i) => bytes.slice(i * size, i * size + size),
  );
/** JSON's nulls (a zero Time), which protobuf leaves out. */
const withoutNulls = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_key, v) => v === null ? undefined : v));

Deno.test("pods are listed as protobuf where the server has it, and read as the cache keeps them", async () => {
  const json = JSON.parse(new TextDecoder().decode(apiserverFixture("podlist.json")));
  const server = startRecordingServer((request) =>
    request.path.endsWith("/pods")
      ? {
        body: undefined,
        headers: { "content-type": "application/vnd.kubernetes.protobuf" },
        chunks: piecesOf(apiserverFixture("podlist.pb"), 500),
      }
      : { body: { items: [], metadata: { resourceVersion: "7" } } }
  );
  try {
    const api = clientNodeApi(server.kubeConfig);
    const listed = await api.listPods({ namespace: "peers-kcm", form: podCachedForm });
    assertEquals(
      listed.items,
      json.items.map((pod: KubeObject) => podAsCached(withoutNulls(pod) as KubeObject)),
    );
    await api.listSets({ kind: "advanceddaemonsets" });
    assertEquals(server.requests.map((r) => r.accept), [
      "application/vnd.kubernetes.protobuf, application/json",
      "application/json",
    ]);
  } finally {
    await server.stop();
  }
});

for (const format of ["protobuf", "JSON"]) {
  Deno.test(`a pod's create and delete answered as ${format} are read as far as their metadata`, async () => {
    const protobuf = format === "protobuf";
    const pod = JSON.parse(new TextDecoder().decode(apiserverFixture("pod.json")));
    const server = startRecordingServer(() =>
      protobuf
        ? {
          body: undefined,
          headers: { "content-type": "application/vnd.kubernetes.protobuf" },
          chunks: piecesOf(apiserverFixture("pod.pb"), 300),
        }
        : { body: pod }
    );
    try {
      const api = clientNodeApi(server.kubeConfig);
      const created = await api.createPod({ namespace: "peers-kcm", body: { metadata: {} } });
      await api.deletePod({ namespace: "peers-kcm", name: "p", uid: "u-1" });
      assertEquals(created, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: protobuf ? withoutNulls(pod.metadata) : pod.metadata,
      });
      assertEquals(
        server.requests.map((r) => `${r.method} ${r.path} ${r.accept}`),
        [
          "POST /api/v1/namespaces/peers-kcm/pods",
          "DELETE /api/v1/namespaces/peers-kcm/pods/p",
        ].map((call) => `${call} application/vnd.kubernetes.protobuf, application/json`),
      );
    } finally {
      await server.stop();
    }
  });
}

for (const format of ["protobuf", "JSON"]) {
  Deno.test(`kubeWatch reads a ${format} watch stream, however it is cut, until the server ends it`, async () => {
    const protobuf = format === "protobuf";
    const stream = apiserverFixture(protobuf ? "watch.pb" : "watch.json");
    const server = startRecordingServer(() => ({
      body: undefined,
      headers: {
        "content-type": protobuf
          ? "application/vnd.kubernetes.protobuf;stream=watch"
          : "application/json",
      },
      chunks: piecesOf(stream, 7),
    }));
    try {
      const events: [string, unknown][] = [];
      const ended = Promise.withResolvers<unknown>();
      await kubeWatch(server.kubeConfig)(
        "/api/v1/namespaces/peers-kcm/pods",
        { resourceVersion: "1", allowWatchBookmarks: true },
        (type, object) => events.push([type, object]),
        ended.resolve,
        podCachedForm.view,
      );
      assertEquals(await ended.promise, null);
      const expected = JSON.parse(new TextDecoder().decode(apiserverFixture("watch.json")));
      assertEquals(events.length, 1);
      assertEquals(events[0][0], expected.type);
      const object = events[0][1] as KubeObject;
      // JSON carries every field; protobuf only the view's, and no nulls (a zero Time): what
      // the cache keeps is the same.
      const sent = protobuf ? withoutNulls(expected.object) : expected.object;
      assertEquals(podAsCached(object), podAsCached(sent as KubeObject));
      assertEquals(server.requests[0].query.get("watch"), "true");
      assertEquals(
        server.requests[0].accept,
        "application/vnd.kubernetes.protobuf;stream=watch, application/json",
      );
    } finally {
      await server.stop();
    }
  });
}

Deno.test("kubeWatch reports a stream cut inside an event as an error naming the watch", async () => {
  const stream = apiserverFixture("watch.pb");
  const server = startRecordingServer(() => ({
    body: undefined,
    headers: { "content-type": "application/vnd.kubernetes.protobuf;stream=watch" },
    chunks: [stream.slice(0, stream.length - 5)],
  }));
  try {
    const ended = Promise.withResolvers<unknown>();
    await kubeWatch(server.kubeConfig)("/api/v1/nodes", {}, () => {}, ended.resolve);
    const err = await ended.promise as KubeError;
    assertEquals(err instanceof KubeError, true);
    assertStringIncludes(err.message, "WATCH /api/v1/nodes");
    assertStringIncludes(err.message, "the watch ended within an event");
  } finally {
    await server.stop();
  }
});

Deno.test("an error answered as a protobuf Status is a KubeError with its status, reason and object", async () => {
  const server = startRecordingServer(() => ({
    status: 404,
    body: undefined,
    headers: { "content-type": "application/vnd.kubernetes.protobuf" },
    chunks: [apiserverFixture("status404.pb")],
  }));
  try {
    const api = clientNodeApi(server.kubeConfig);
    const err = await assertRejects(() => api.listPods({ namespace: "default" }), KubeError);
    assertEquals([err.status, err.reason, err.objectName], [404, "NotFound", "no-such-pod"]);
    assertStringIncludes(err.message, 'pods "no-such-pod" not found');
  } finally {
    await server.stop();
  }
});
