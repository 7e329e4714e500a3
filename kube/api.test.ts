import { assertEquals, assertRejects, assertStringIncludes } from "@std/assert";
import { clientNodeApi, interceptApi } from "./api.ts";
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
    const kept = await api.listNodes({ keep: (n) => ({ metadata: { name: n.metadata.name } }) });
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
