import { assertEquals, assertStringIncludes } from "@std/assert";
import { Hono } from "hono";
import { memoryLogger } from "../lib/log.ts";
import { interceptApi, type Overrides } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { KubeError } from "../kube/errors.ts";
import { type MemoryApi, memoryApi } from "../tests/doubles/memory-api.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { leanApiOver } from "../tests/doubles/lean-api.ts";
import { requireBearer, staticTokenAuthenticator } from "./auth.ts";
import { errorHandler } from "./errors.ts";
import { registerOtaRoutes } from "./ota.ts";
import { Ota } from "../controller/ota.ts";
import { disconnectedText } from "../controller/ota-checks.ts";
import { EdgeOta } from "../edge/ota.ts";
import { NodePodCache } from "../edge/pod-cache.ts";
import { UpgradeJournal } from "../edge/upgrade-journal.ts";
import { eventually } from "../lib/eventually.ts";
import { rolloutStatusObject } from "../api/rollout-status.ts";
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

type Where = "edge" | "controller";

/**
 * The OTA routes as the edge agent serves them (node worker2 unless `node`, its cache filled,
 * a state dir of its own) or as the controller does, over the same seeded memory API.
 */
async function otaApp(
  where: Where,
  options: { node?: string; overrides?: Overrides; deadlineMs?: number; pods?: KubeObject[] } = {},
) {
  const api = memoryApi();
  seed(api);
  for (const extra of options.pods ?? []) api.put("pods", extra);
  const logs = memoryLogger();
  const intercepted = interceptApi(api, options.overrides ?? {});
  const called = new Set<string>();
  const counted = interceptApi(
    intercepted,
    Object.fromEntries(
      (["listPods", "getPod", "deletePod", "patchPodStatus", "getSet", "listSets"] as const).map((
        m,
      ) => [
        m,
        // deno-lint-ignore no-explicit-any
        (p: any, next: (p: any) => Promise<any>) => {
          called.add(m);
          return next(p);
        },
      ]),
    ) as Overrides,
  );
  const app = new Hono();
  app.onError(errorHandler(logs));
  const guard = requireBearer(staticTokenAuthenticator(token));
  const stops: (() => Promise<void>)[] = [];
  if (where === "controller") {
    const kube = new KubeClient(counted, {
      retry: { attempts: 2, baseDelayMs: 1, maxDelayMs: 1, sleep: () => Promise.resolve() },
    });
    registerOtaRoutes(app, {
      ota: new Ota({ kube, logger: logs, deadlineMs: options.deadlineMs }),
      guard,
      logger: logs,
    });
  } else {
    const node = options.node ?? "worker2";
    const stateDir = await Deno.makeTempDir({ prefix: "edgeroll-ota-test-" });
    const lean = leanApiOver(counted);
    const cache = new NodePodCache({ api: lean, node, stateDir, logger: logs });
    const journal = new UpgradeJournal(stateDir, node);
    const ota = new EdgeOta({
      api: lean,
      cache,
      journal,
      node,
      logger: logs,
      deadlineMs: options.deadlineMs,
    });
    cache.start();
    stops.push(async () => {
      await cache.stop();
      await Deno.remove(stateDir, { recursive: true });
    });
    registerOtaRoutes(app, { ota, guard, logger: logs });
  }
  const request = (path: string, method = "POST") =>
    Promise.resolve(
      app.request(path, { method, headers: { authorization: `Bearer ${token}` } }),
    );
  if (where === "edge") {
    await eventually(
      "the edge cache filled",
      async () => (await request("/pods", "GET")).status === 200,
    );
  }
  return {
    api,
    logs,
    request,
    called,
    [Symbol.asyncDispose]: async () => {
      for (const stop of stops) await stop();
    },
  };
}

const names = (list: { items: KubeObject[] }) => list.items.map((p) => p.metadata.name);
const wheres: Where[] = ["edge", "controller"];

Deno.test("OTA upgrade: deletes the pod with its UID and answers as YurtHub", async () => {
  for (const where of wheres) {
    const uids: string[] = [];
    await using h = await otaApp(where, {
      overrides: {
        deletePod: (p, next) => {
          uids.push(p.uid);
          return next(p);
        },
      },
    });
    const res = await h.request(upgrade("default", "nginx-daemonset-bwzss"));
    assertEquals([res.status, res.headers.get("content-type")], [200, "text/plain; charset=UTF-8"]);
    assertEquals(await res.text(), "Start updating pod default/nginx-daemonset-bwzss");
    assertEquals(h.api.objects.pods.has("default/nginx-daemonset-bwzss"), false);
    assertEquals([h.api.writes, uids], [["delete pods"], ["uid-nginx-daemonset-bwzss"]], where);
    assertEquals(h.logs.lines.some((l) => l.msg === "OTA upgrade started"), true);
  }
});

Deno.test("OTA upgrade: pre-checks fail with YurtHub's status and sentence; nothing is deleted", async () => {
  for (const where of wheres) {
    const extra = (api: MemoryApi) => {
      api.put("pods", pod("nginx-daemonset-gone1", "worker2", nginx, [need("True")]));
      const going = api.objects.pods.get("default/nginx-daemonset-gone1")!;
      going.metadata.deletionTimestamp = "2026-06-01T12:00:00Z";
      api.put(
        "pods",
        pod("nginx-daemonset-img01", "worker2", nginx, [need("True"), {
          type: "PodImageReady",
          status: "False",
          message: "controllerrevision: v2hash",
        }]),
      );
      api.put(
        "pods",
        pod("nginx-daemonset-orph1", "worker2", { set: "nginx-daemonset", uid: "old" }, [
          need("True"),
        ]),
      );
      api.put("pods", pod("unowned-abcde", "worker2", undefined, [need("True")]));
    };
    await using h = await otaApp(where);
    extra(h.api);
    const status = (id: string, error: string) =>
      `Pre check update pod failed, Failed to check pod ${id} status, error: ${error}`;
    const cases: [string, number, string][] = [
      [
        "nginx-daemonset-gone1",
        403,
        status(
          "default/nginx-daemonset-gone1",
          "Pod default/nginx-daemonset-gone1 is deleting, can not be updated",
        ),
      ],
      [
        "nginx-daemonset-img01",
        403,
        "Pre check update pod failed, Failed to check pod default/nginx-daemonset-img01 image ready, error: Pod: default/nginx-daemonset-img01 image is not ready, reason: , message: controllerrevision: v2hash",
      ],
      [
        "plain-fghij",
        403,
        status(
          "default/plain-fghij",
          "Pod: default/plain-fghij update status is False, can not be updated",
        ),
      ],
      ["unowned-abcde", 400, "Pod has no owner references"],
      ...(where === "edge"
        ? [
          [
            "nginx-daemonset-ppf9p",
            403,
            status(
              "default/nginx-daemonset-ppf9p",
              "Pod: default/nginx-daemonset-ppf9p is running on worker, can not be updated",
            ),
          ],
        ] as [string, number, string][]
        // Only the controller may read DaemonSets: the edge agent, with its node's credentials,
        // trusts the mark, which edgeroll sets False out of OTA mode (engine tests).
        : [
          [
            "nginx-daemonset-orph1",
            403,
            status(
              "default/nginx-daemonset-orph1",
              "its DaemonSet default/nginx-daemonset no longer exists",
            ),
          ],
          [
            "rolling-abcde",
            403,
            status(
              "default/rolling-abcde",
              "DaemonSet default/rolling is not in OTA mode (annotation apps.openyurt.io/update-strategy: OTA, updateStrategy OnDelete)",
            ),
          ],
        ] as [string, number, string][]),
    ];
    for (const [name, code, text] of cases) {
      const res = await h.request(upgrade("default", name));
      assertEquals([res.status, await res.text()], [code, text], `${where} ${name}`);
    }
    assertEquals(h.api.writes, [], where);
  }
});

Deno.test("OTA upgrade: a ready image of the marked revision passes", async () => {
  for (const where of wheres) {
    await using h = await otaApp(where);
    h.api.put(
      "pods",
      pod("nginx-daemonset-img02", "worker2", nginx, [need("True"), {
        type: "PodImageReady",
        status: "True",
        message: "controllerrevision: v2hash",
      }]),
    );
    assertEquals((await h.request(upgrade("default", "nginx-daemonset-img02"))).status, 200, where);
    assertEquals(h.api.writes, ["delete pods"]);
  }
});

Deno.test("OTA upgrade: no such pod 404; bad names 400 with the issues; no token 401, all plain text", async () => {
  for (const where of wheres) {
    await using h = await otaApp(where);
    const missing = await h.request(upgrade("default", "nope"));
    assertEquals([missing.status, await missing.text()], [
      404,
      'Get pod failed, pods "nope" not found in namespace default',
    ]);
    const bad = await h.request(upgrade("Default", "a_b"));
    assertEquals(bad.status, 400);
    const lines = (await bad.text()).split("\n");
    assertEquals(lines[0], "invalid param");
    assertEquals(lines.slice(1).map((l) => l.split(":")[0]), ["ns", "pod"]);
  }
  await using h = harness();
  for (
    const [path, method] of [
      [upgrade("default", "p"), "POST"],
      ["/openyurt.io/v1/namespaces/default/pods/p/imagepull", "POST"],
      ["/pods", "GET"],
      ["/openyurt.io/v1/pods", "GET"],
    ]
  ) {
    const res = await h.request(path, { method, auth: false });
    assertEquals([res.status, await res.text()], [401, "a bearer token is required"], path);
  }
});

Deno.test("OTA upgrade: a pod replaced since the check is not deleted (500 Apply update failed)", async () => {
  for (const where of wheres) {
    const seeded: { api?: MemoryApi } = {};
    await using h = await otaApp(where, {
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
    seeded.api = h.api;
    const res = await h.request(upgrade("default", "nginx-daemonset-bwzss"));
    assertEquals([res.status, await res.text()], [
      500,
      "Apply update failed, the pod was replaced since it was checked",
    ]);
    assertEquals(h.api.objects.pods.get("default/nginx-daemonset-bwzss")?.metadata.uid, "new");
  }
});

Deno.test("OTA routes answer 503 when the API server is unreachable or silent", async () => {
  for (const where of wheres) {
    await using unreachable = await otaApp(where, {
      overrides: {
        getPod: () => Promise.reject(new KubeError(0, "Unreachable", "connection refused", "get")),
      },
    });
    const res = await unreachable.request(upgrade("default", "nginx-daemonset-bwzss"));
    assertEquals(res.status, 503, where);
    assertStringIncludes(
      await res.text(),
      where === "edge"
        ? disconnectedText
        : "Kubernetes API unavailable, get: no answer Unreachable",
    );
    await using silent = await otaApp(where, {
      deadlineMs: 5,
      overrides: { getPod: () => new Promise(() => {}) },
    });
    const late = await silent.request(upgrade("default", "nginx-daemonset-bwzss"));
    assertEquals(late.status, 503);
    await late.body?.cancel();
    assertEquals(silent.api.writes, []);
  }
  await using down = await otaApp("controller", {
    overrides: {
      listSets: () => Promise.reject(new KubeError(503, "ServiceUnavailable", "down", "list")),
    },
  });
  const listed = await down.request("/pods", "GET");
  assertEquals(listed.status, 503);
  assertStringIncludes(await listed.text(), "Kubernetes API unavailable");
});

Deno.test("GET /pods on the edge: every pod of its node from its cache, as YurtHub; other nodes 403", async () => {
  await using h = await otaApp("edge");
  const res = await h.request("/pods", "GET");
  assertEquals([res.status, res.headers.get("age")], [200, "0"]);
  const list = await res.json();
  assertEquals([list.kind, list.apiVersion, list.upgradeRequests], ["PodList", "v1", []]);
  assertEquals(names(list), [
    "nginx-daemonset-bwzss",
    "plain-fghij",
    "rolling-abcde",
    "standalone",
  ]);
  assertEquals(await (await h.request("/openyurt.io/v1/pods", "GET")).json(), list);
  assertEquals((await h.request("/pods?node=worker2", "GET")).status, 200);
  const other = await h.request("/pods?node=worker3", "GET");
  assertEquals([other.status, await other.text()], [
    403,
    "this agent serves node worker2 only, not worker3",
  ]);
  assertEquals((await h.request("/pods?node=Not_A_Node", "GET")).status, 400);
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
  // The controller serves every node; whenConnected is the edge agent's.
  const res = await h.request(upgrade("default", "nginx-daemonset-rgp9h"));
  assertEquals([res.status, await res.text()], [
    200,
    "Start updating pod default/nginx-daemonset-rgp9h",
  ]);
  const queued = await h.request(
    `${upgrade("default", "nginx-daemonset-bwzss")}?whenConnected=true`,
  );
  assertEquals(queued.status, 400);
  assertStringIncludes(await queued.text(), "whenConnected is served by the edge agent");
});

const imagepull = (ns: string, pod: string) =>
  `/openyurt.io/v1/namespaces/${ns}/pods/${pod}/imagepull`;

Deno.test("imagepull: marks PodImageReady False with the pod's revision, then upgrade waits for the pull", async () => {
  for (const where of wheres) {
    await using h = await otaApp(where);
    const res = await h.request(imagepull("default", "nginx-daemonset-bwzss"));
    assertEquals(
      [res.status, await res.text()],
      [200, "Image pre-pull requested for pod default/nginx-daemonset-bwzss"],
      where,
    );
    assertEquals(h.api.writes, ["patch pods/status"], where);
    const marked = h.api.objects.pods.get("default/nginx-daemonset-bwzss")!;
    const image = (marked.status as { conditions: Record<string, string>[] }).conditions
      .find((c) => c.type === "PodImageReady");
    assertEquals(
      [image?.status, image?.reason ?? "", image?.message],
      ["False", "", "controllerrevision: v2hash"],
      where,
    );
    // A request again after a failure clears its reason, as YurtHub writes the whole condition.
    image!.reason = "PullImageFail";
    await h.request(imagepull("default", "nginx-daemonset-bwzss"));
    const again = (h.api.objects.pods.get("default/nginx-daemonset-bwzss")!.status as {
      conditions: Record<string, string>[];
    }).conditions.find((c) => c.type === "PodImageReady");
    assertEquals([again?.status, again?.reason ?? ""], ["False", ""], where);
    const blocked = await h.request(upgrade("default", "nginx-daemonset-bwzss"));
    assertEquals(blocked.status, 403, where);
    assertStringIncludes(await blocked.text(), "image is not ready", where);
  }
});

Deno.test("imagepull: YurtHub's checks and sentences; nothing is written", async () => {
  for (const where of wheres) {
    await using h = await otaApp(where);
    h.api.put("pods", pod("nginx-daemonset-gone2", "worker2", nginx, [need("True")]));
    h.api.objects.pods.get("default/nginx-daemonset-gone2")!.metadata.deletionTimestamp =
      "2026-06-01T12:00:00Z";
    const failed = (id: string, error: string) =>
      `Failed to check pod status ${id}, error: ${error}`;
    const cases: [string, number, string][] = [
      [
        "nginx-daemonset-gone2",
        403,
        failed(
          "default/nginx-daemonset-gone2",
          "Pod default/nginx-daemonset-gone2 is deleting, can not be updated",
        ),
      ],
      [
        "plain-fghij",
        403,
        failed(
          "default/plain-fghij",
          "Pod: default/plain-fghij update status is False, can not be updated",
        ),
      ],
      [
        "nosuch-abcde",
        404,
        `Get pod failed, pods "nosuch-abcde" not found in namespace default`,
      ],
      ...(where === "edge"
        ? [[
          "nginx-daemonset-rgp9h",
          403,
          failed(
            "default/nginx-daemonset-rgp9h",
            "Pod: default/nginx-daemonset-rgp9h is running on worker3, can not be updated",
          ),
        ]] as [string, number, string][]
        // The controller pulls only for sets it rolls in OTA mode: nobody would pull otherwise.
        : [[
          "rolling-abcde",
          403,
          "Pre check update pod failed, Failed to check pod default/rolling-abcde status, error: DaemonSet default/rolling is not in OTA mode (annotation apps.openyurt.io/update-strategy: OTA, updateStrategy OnDelete)",
        ]] as [string, number, string][]),
    ];
    for (const [name, code, text] of cases) {
      const res = await h.request(imagepull("default", name));
      assertEquals([res.status, await res.text()], [code, text], `${where} ${name}`);
    }
    assertEquals(h.api.writes, [], where);
  }
});

Deno.test("the edge agent's OTA routes list, read and delete pods, never a set", async () => {
  await using h = await otaApp("edge");
  for (
    const [path, method] of [
      ["/pods", "GET"],
      ["/openyurt.io/v1/pods", "GET"],
      [upgrade("default", "plain-fghij"), "POST"], // refused: no mark
      ["/openyurt.io/v1/namespaces/default/pods/standalone/imagepull", "POST"], // refused
      [imagepull("default", "nginx-daemonset-bwzss"), "POST"],
      [upgrade("default", "rolling-abcde"), "POST"],
    ]
  ) await h.request(path, method);
  assertEquals([...h.called].sort(), ["deletePod", "getPod", "listPods", "patchPodStatus"]);
});

Deno.test("OTA upgrade on the edge: a pod the node's credentials may not read is refused as not on this node", async () => {
  await using h = await otaApp("edge", {
    overrides: {
      getPod: () =>
        Promise.reject(
          new KubeError(
            403,
            "Forbidden",
            "no relationship found between node 'worker2' and this object",
            "get pod",
          ),
        ),
    },
  });
  const res = await h.request(upgrade("default", "nginx-daemonset-rgp9h"));
  assertEquals(res.status, 403);
  assertStringIncludes(await res.text(), "pod is not bound to node worker2");
  assertEquals(h.api.writes, []);
});

Deno.test("OTA upgrade on the controller: outside its node's maintenance window, 403 names the window and its next opening", async () => {
  await using h = await otaApp("controller");
  const windowed = daemonSet("nginx-daemonset", "OTA", nginx.uid);
  windowed.metadata.annotations!["apps.edgeroll.dev/maintenance"] = JSON.stringify({
    timeZoneLabel: "edgeroll.dev/time-zone",
    windows: [{ start: "01:00", duration: "2h" }],
  });
  h.api.put("daemonsets", windowed);
  h.api.put("nodes", {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "worker", labels: { "edgeroll.dev/time-zone": "Asia/Tokyo" } },
  });
  h.api.put(
    "rolloutstatuses",
    rolloutStatusObject(windowed as Parameters<typeof rolloutStatusObject>[0], {
      maintenance: {
        open: false,
        nextOpening: "2026-06-01T16:00:00Z",
        groups: [{
          timeZone: "Asia/Tokyo",
          state: "Closed",
          opensAt: "2026-06-01T16:00:00Z",
          outdated: 1,
        }],
      },
    }) as unknown as KubeObject,
  );
  const res = await h.request(upgrade("default", "nginx-daemonset-ppf9p"));
  assertEquals(res.status, 403);
  assertEquals(
    await res.text(),
    "Pre check update pod failed, Failed to check pod default/nginx-daemonset-ppf9p status, error: Pod: default/nginx-daemonset-ppf9p update status is False, can not be updated: the maintenance window of Asia/Tokyo is closed until 2026-06-01T16:00:00Z",
  );
  // A marked pod on another node passes as before; nothing was deleted for the refused one.
  assertEquals(h.api.objects.pods.has("default/nginx-daemonset-ppf9p"), true);
  assertEquals((await h.request(upgrade("default", "nginx-daemonset-bwzss"))).status, 200);
});

Deno.test("a pod its node's maintenance window holds may pull the revision it waits for, not upgrade to it", async () => {
  for (const where of wheres) {
    await using h = await otaApp(where, {
      pods: [
        pod("nginx-daemonset-held1", "worker2", nginx, [{
          type: "PodNeedUpgrade",
          status: "False",
          reason: "OutsideMaintenanceWindow",
          message: "controllerrevision: v2hash",
        } as { type: string; status: string; message?: string }]),
      ],
    });
    const pulled = await h.request(
      `/openyurt.io/v1/namespaces/default/pods/nginx-daemonset-held1/imagepull`,
    );
    assertEquals(pulled.status, 200, where);
    const asked = h.api.objects.pods.get("default/nginx-daemonset-held1")!.status as {
      conditions: { type: string; status: string; message?: string }[];
    };
    assertEquals(
      asked.conditions.find((c) => c.type === "PodImageReady")?.message,
      "controllerrevision: v2hash",
    );
    const refused = await h.request(upgrade("default", "nginx-daemonset-held1"));
    assertEquals(refused.status, 403, where);
    assertStringIncludes(
      await refused.text(),
      "update status is False, can not be updated: its node's maintenance window is closed",
    );
  }
});
