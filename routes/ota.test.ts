import { assertEquals, assertStringIncludes } from "@std/assert";
import { Hono } from "hono";
import { memoryLogger } from "../lib/log.ts";
import { interceptApi, type Overrides } from "../kube/api.ts";
import { KubeClient, type RequestRecord } from "../kube/client.ts";
import { KubeError } from "../kube/errors.ts";
import { type MemoryApi, memoryApi } from "../tests/doubles/memory-api.ts";
import type { KubeObject } from "../kube/objects.ts";
import { requireBearer, staticTokenAuthenticator } from "./auth.ts";
import { errorHandler } from "./errors.ts";
import { registerOtaRoutes } from "./ota.ts";
import { edgeOtaCalls, Ota } from "../controller/ota.ts";
import { harness, token } from "../tests/doubles/controller-harness.ts";

const upgrade = (ns: string, pod: string) => `/openyurt.io/v1/namespaces/${ns}/pods/${pod}/upgrade`;

function daemonSet(name: string, strategy: string | undefined, uid: string): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name,
      namespace: "default",
      uid,
      annotations: strategy ? { "apps.openyurt.io/update-strategy": strategy } : {},
    },
    spec: {
      selector: { matchLabels: { app: name } },
      updateStrategy: { type: "OnDelete" },
      template: { spec: { containers: [{ name: "c", image: `${name}:1` }] } },
    },
  };
}

function pod(
  name: string,
  node: string,
  owner: { set: string; uid: string } | undefined,
  conditions: { type: string; status: string; message?: string }[] = [],
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "default",
      uid: `uid-${name}`,
      labels: owner ? { app: owner.set } : {},
      ownerReferences: owner
        ? [{
          apiVersion: "apps/v1",
          kind: "DaemonSet",
          name: owner.set,
          uid: owner.uid,
          controller: true,
        }]
        : [],
    },
    spec: { nodeName: node, containers: [{ name: "c" }] },
    status: { conditions },
  };
}

const need = (status: string) => ({
  type: "PodNeedUpgrade",
  status,
  message: "controllerrevision: v2hash",
});
const nginx = { set: "nginx-daemonset", uid: "ds-nginx" };
const rolling = { set: "rolling", uid: "ds-rolling" };

/** OpenYurt's walkthrough: an OTA DaemonSet on three nodes, plus pods OTA must not touch. */
function seed(api: MemoryApi) {
  api.put("daemonsets", daemonSet("nginx-daemonset", "OTA", nginx.uid));
  api.put("daemonsets", daemonSet("rolling", "AdvancedRollingUpdate", rolling.uid));
  api.put("daemonsets", daemonSet("plain", undefined, "ds-plain"));
  api.put("pods", pod("nginx-daemonset-bwzss", "worker2", nginx, [need("True")]));
  api.put("pods", pod("nginx-daemonset-ppf9p", "worker", nginx, [need("False")]));
  api.put("pods", pod("nginx-daemonset-rgp9h", "worker3", nginx, [need("True")]));
  api.put("pods", pod("rolling-abcde", "worker2", rolling, [need("True")]));
  api.put("pods", pod("plain-fghij", "worker2", { set: "plain", uid: "ds-plain" }));
  api.put("pods", pod("standalone", "worker2", undefined));
}

/**
 * The OTA routes as the edge agent serves them (one node, a short deadline), or as the
 * controller does (`node: null`).
 */
function edgeApp(
  options: {
    node?: string | null;
    overrides?: Overrides;
    deadlineMs?: number;
    onRequest?: (record: RequestRecord) => void;
  } = {},
) {
  const api = memoryApi();
  seed(api);
  const logs = memoryLogger();
  const kube = new KubeClient(interceptApi(api, options.overrides ?? {}), {
    retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1, sleep: () => Promise.resolve() },
    onRequest: options.onRequest,
  });
  const app = new Hono();
  app.onError(errorHandler(logs));
  const node = options.node === null ? undefined : options.node ?? "worker2";
  registerOtaRoutes(app, {
    ota: new Ota({ kube, logger: logs, node, deadlineMs: options.deadlineMs }),
    guard: requireBearer(staticTokenAuthenticator(token)),
  });
  const request = (path: string, method = "POST") =>
    Promise.resolve(
      app.request(path, { method, headers: { authorization: `Bearer ${token}` } }),
    );
  return { api, logs, request };
}

const names = (list: { items: KubeObject[] }) => list.items.map((p) => p.metadata.name);

Deno.test("OTA upgrade: deletes the pod with its UID and answers as YurtHub", async () => {
  const uids: string[] = [];
  const { api, logs, request } = edgeApp({
    overrides: {
      deletePod: (p, next) => {
        uids.push(p.uid);
        return next(p);
      },
    },
  });
  const res = await request(upgrade("default", "nginx-daemonset-bwzss"));
  assertEquals(res.status, 200);
  assertEquals(await res.text(), "Start updating pod default/nginx-daemonset-bwzss");
  assertEquals(api.objects.pods.has("default/nginx-daemonset-bwzss"), false);
  assertEquals([api.writes, uids], [["delete pods"], ["uid-nginx-daemonset-bwzss"]]);
  assertEquals(logs.lines.some((l) => l.msg === "OTA upgrade started"), true);
});

Deno.test("OTA upgrade: pre-checks fail with 403 and the reason; nothing is deleted", async () => {
  for (const where of ["edge", "controller"] as const) {
    const { api, request } = edgeApp({ node: where === "edge" ? "worker2" : null });
    api.put("pods", pod("nginx-daemonset-gone1", "worker2", nginx, [need("True")]));
    const going = api.objects.pods.get("default/nginx-daemonset-gone1")!;
    going.metadata.deletionTimestamp = "2026-06-01T12:00:00Z";
    api.put(
      "pods",
      pod("nginx-daemonset-img01", "worker2", nginx, [need("True"), {
        type: "PodImageReady",
        status: "True",
        message: "controllerrevision: v1hash",
      }]),
    );
    api.put(
      "pods",
      pod("nginx-daemonset-orph1", "worker2", { set: "nginx-daemonset", uid: "old" }, [
        need("True"),
      ]),
    );
    const cases: [string, string][] = [
      ["nginx-daemonset-gone1", "is being deleted"],
      ["nginx-daemonset-img01", "is not ready (PodImageReady True: controllerrevision: v1hash)"],
      ["standalone", "is not controlled by a DaemonSet"],
      ...(where === "edge"
        ? [
          ["nginx-daemonset-ppf9p", "runs on node worker, not on worker2"],
          ["plain-fghij", "PodNeedUpgrade is not True"],
        ] as [string, string][]
        // Only the controller may read DaemonSets: the edge agent, with its node's credentials,
        // trusts the mark, which edgeroll sets False out of OTA mode (engine tests).
        : [
          ["nginx-daemonset-orph1", "its DaemonSet default/nginx-daemonset no longer exists"],
          ["rolling-abcde", "is not in OTA mode"],
        ] as [string, string][]),
    ];
    for (const [name, reason] of cases) {
      const res = await request(upgrade("default", name));
      assertEquals(res.status, 403, `${where} ${name}`);
      const { error } = await res.json();
      assertEquals(error.reason, "PreCheckFailed");
      assertStringIncludes(error.message, reason);
    }
    assertEquals(api.writes, [], where);
  }
});

Deno.test("OTA upgrade: PodNeedUpgrade False is refused; a ready image of that revision is not", async () => {
  const { api, request } = edgeApp({ node: "worker" });
  const res = await request(upgrade("default", "nginx-daemonset-ppf9p"));
  assertEquals(res.status, 403);
  assertStringIncludes((await res.json()).error.message, "PodNeedUpgrade is not True");
  api.put(
    "pods",
    pod("nginx-daemonset-img02", "worker", nginx, [need("True"), {
      type: "PodImageReady",
      status: "True",
      message: "controllerrevision: v2hash",
    }]),
  );
  assertEquals((await request(upgrade("default", "nginx-daemonset-img02"))).status, 200);
  assertEquals(api.writes, ["delete pods"]);
});

Deno.test("OTA upgrade: no such pod 404; bad names 400 with the issues; no token 401", async () => {
  const { request } = edgeApp();
  const missing = await request(upgrade("default", "nope"));
  assertEquals([missing.status, (await missing.json()).error.reason], [404, "NotFound"]);
  const bad = await request(upgrade("Default", "a_b"));
  assertEquals(bad.status, 400);
  const { error } = await bad.json();
  assertEquals(error.issues.map((i: { path: string[] }) => i.path[0]), ["ns", "pod"]);

  await using h = harness();
  for (
    const [path, method] of [
      [upgrade("default", "p"), "POST"],
      ["/openyurt.io/v1/namespaces/default/pods/p/imagepull", "POST"],
      ["/pods", "GET"],
      ["/openyurt.io/v1/pods", "GET"],
    ]
  ) {
    assertEquals((await h.request(path, { method, auth: false })).status, 401, path);
  }
});

Deno.test("OTA upgrade: a pod replaced since the check is not deleted (409)", async () => {
  const seeded: { api?: MemoryApi } = {};
  const app = edgeApp({
    overrides: {
      deletePod: (p, next) => {
        seeded.api!.put("pods", {
          ...pod("nginx-daemonset-bwzss", "worker2", nginx),
          metadata: { ...pod("nginx-daemonset-bwzss", "worker2", nginx).metadata, uid: "new" },
        });
        return next(p);
      },
    },
  });
  seeded.api = app.api;
  const res = await app.request(upgrade("default", "nginx-daemonset-bwzss"));
  assertEquals(res.status, 409);
  assertEquals(app.api.objects.pods.get("default/nginx-daemonset-bwzss")?.metadata.uid, "new");
});

Deno.test("OTA routes answer 503 when the API server is unreachable or silent", async () => {
  const unreachable = edgeApp({
    overrides: {
      getPod: () => Promise.reject(new KubeError(0, "Unreachable", "connection refused", "get")),
      listPods: () => Promise.reject(new KubeError(503, "ServiceUnavailable", "down", "list")),
    },
  });
  for (
    const [path, method] of [[upgrade("default", "nginx-daemonset-bwzss"), "POST"], [
      "/pods",
      "GET",
    ]]
  ) {
    const res = await unreachable.request(path, method);
    assertEquals(res.status, 503, path);
    assertEquals((await res.json()).error.reason, "KubernetesUnavailable");
  }
  const silent = edgeApp({ deadlineMs: 5, overrides: { getPod: () => new Promise(() => {}) } });
  const res = await silent.request(upgrade("default", "nginx-daemonset-bwzss"));
  assertEquals(res.status, 503);
  assertStringIncludes((await res.json()).error.message, "did not answer within");
  assertEquals(silent.api.writes, []);
});

Deno.test("GET /pods on the edge: every pod of its node, as YurtHub; other nodes 403", async () => {
  const { request } = edgeApp();
  const res = await request("/pods", "GET");
  assertEquals(res.status, 200);
  const list = await res.json();
  assertEquals([list.kind, list.apiVersion], ["PodList", "v1"]);
  assertEquals(names(list).sort(), [
    "nginx-daemonset-bwzss",
    "plain-fghij",
    "rolling-abcde",
    "standalone",
  ]);
  assertEquals(await (await request("/openyurt.io/v1/pods", "GET")).json(), list);
  assertEquals((await request("/pods?node=worker2", "GET")).status, 200);
  assertEquals((await request("/pods?node=worker3", "GET")).status, 403);
  assertEquals((await request("/pods?node=Not_A_Node", "GET")).status, 400);
});

Deno.test("GET /pods on the controller: pods of OTA DaemonSets, by node if asked", async () => {
  await using h = harness();
  seed(h.api);
  const get = async (path: string) => {
    const res = await h.request(path, { method: "GET" });
    assertEquals(res.status, 200, path);
    return await res.json();
  };
  assertEquals(names(await get("/pods")), [
    "nginx-daemonset-bwzss",
    "nginx-daemonset-ppf9p",
    "nginx-daemonset-rgp9h",
  ]);
  assertEquals(names(await get("/openyurt.io/v1/pods?node=worker3")), ["nginx-daemonset-rgp9h"]);
  // The controller serves every node.
  const res = await h.request(upgrade("default", "nginx-daemonset-rgp9h"));
  assertEquals([res.status, await res.text()], [
    200,
    "Start updating pod default/nginx-daemonset-rgp9h",
  ]);
});

Deno.test("imagepull answers 501: edgeroll has no image pre-puller", async () => {
  const { api, request } = edgeApp();
  const res = await request(
    "/openyurt.io/v1/namespaces/default/pods/nginx-daemonset-bwzss/imagepull",
  );
  assertEquals(res.status, 501);
  const { error } = await res.json();
  assertEquals(error.reason, "NotImplemented");
  assertStringIncludes(error.message, "pre-pull");
  assertEquals(api.writes, []);
});

Deno.test("the edge agent's OTA routes call exactly edgeOtaCalls, never a set", async () => {
  const called = new Set<string>();
  const { request } = edgeApp({ onRequest: ({ method }) => called.add(method) });
  for (
    const [path, method] of [
      ["/pods", "GET"],
      ["/openyurt.io/v1/pods", "GET"],
      [upgrade("default", "plain-fghij"), "POST"], // refused: no mark
      [upgrade("default", "nginx-daemonset-bwzss"), "POST"],
      ["/openyurt.io/v1/namespaces/default/pods/standalone/imagepull", "POST"],
    ]
  ) await request(path, method);
  assertEquals([...called].sort(), [...edgeOtaCalls].sort());
});

Deno.test("OTA upgrade on the edge: a pod the node's credentials may not read is refused as not on this node", async () => {
  const { api, request } = edgeApp({
    overrides: {
      getPod: () =>
        Promise.reject(
          new KubeError(
            403,
            "Forbidden",
            "no relationship found between node 'worker2' and this object",
            "get getPod",
          ),
        ),
    },
  });
  const res = await request(upgrade("default", "nginx-daemonset-rgp9h"));
  assertEquals(res.status, 403);
  const { error } = await res.json();
  assertEquals(error.reason, "PreCheckFailed");
  assertStringIncludes(error.message, "is not bound to node worker2");
  assertEquals(api.writes, []);
});
