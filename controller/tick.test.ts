import { assertEquals, assertStringIncludes } from "@std/assert";
import { KubeError } from "../kube/errors.ts";
import { advancedDaemonSet, harness } from "../tests/doubles/controller-harness.ts";

function withStatus(name: string, status: Record<string, unknown>, generation = 1) {
  const set = advancedDaemonSet(name);
  return { ...set, metadata: { ...set.metadata, generation }, status };
}

Deno.test("a tick reconciles sets past nextCheckAt or with a moved generation, not the others", async () => {
  await using h = harness({ nodes: 1, deps: { resyncSeconds: 3600 } });
  /** One set due, one later, one with a moved generation, one quiet. */
  const putSets = () => {
    h.api.objects.advanceddaemonsets.clear();
    h.api.put(
      "advanceddaemonsets",
      withStatus("due", { observedGeneration: 1, nextCheckAt: "2026-06-01T11:59:00Z" }),
    );
    h.api.put(
      "advanceddaemonsets",
      withStatus("later", { observedGeneration: 1, nextCheckAt: "2026-06-01T13:00:00Z" }),
    );
    h.api.put("advanceddaemonsets", withStatus("moved", { observedGeneration: 1 }, 2));
    h.api.put("advanceddaemonsets", withStatus("quiet", { observedGeneration: 1 }));
  };
  putSets();
  // The first tick is a full resync; the second only takes what is due.
  const first = await (await h.request("/tick")).json();
  assertEquals([first.full, first.sets, first.reconciled.length], [true, 4, 4]);
  // Put the statuses back: the first tick's reconciles wrote their own.
  putSets();
  const second = await (await h.request("/tick")).json();
  assertEquals(second.full, false);
  assertEquals(second.reconciled.map((e: { set: string; why: string }) => `${e.set} ${e.why}`), [
    "advanceddaemonsets/edge/due nextCheckAt",
    "advanceddaemonsets/edge/moved generation",
  ]);
  const forced = await (await h.request("/tick?full=true")).json();
  assertEquals([forced.full, forced.reconciled.length], [true, 4]);
});

Deno.test("a tick skips DaemonSets edgeroll does not manage and reports failures per set", async () => {
  await using h = harness({
    nodes: 1,
    plan: () => {
      throw new Error("planner exploded");
    },
  });
  h.api.put("daemonsets", { metadata: { name: "plain", namespace: "edge" }, spec: {} });
  const body = await (await h.request("/tick?full=true")).json();
  assertEquals(body.sets, 1);
  assertEquals(
    body.reconciled.map((e: { set: string; result: string }) => `${e.set} ${e.result}`),
    [
      "advanceddaemonsets/edge/agent InternalError",
    ],
  );
  assertEquals(body.reconciled[0].error, "planner exploded");
});

Deno.test("without the CRD in discovery a tick lists DaemonSets only and says which kinds are served", async () => {
  await using h = harness({ nodes: 1 });
  h.api.apiGroups.splice(h.api.apiGroups.findIndex((g) => g.name === "apps.edgeroll.dev"), 1);
  h.api.put("daemonsets", {
    metadata: {
      name: "yurt",
      namespace: "edge",
      annotations: { "apps.openyurt.io/update-strategy": "OTA" },
    },
    spec: {},
  });
  const res = await h.request("/tick?full=true");
  const body = await res.json();
  assertEquals([res.status, body.served, body.sets], [200, ["daemonsets"], 1]);
  assertEquals(body.reconciled.map((e: { set: string }) => e.set), ["daemonsets/edge/yurt"]);
});

Deno.test("a list that fails when discovery says the kind is served fails the tick with its path", async () => {
  await using h = harness({
    nodes: 1,
    overrides: {
      listSets: ({ kind }, next) =>
        kind === "advanceddaemonsets"
          ? Promise.reject(
            new KubeError(
              404,
              "NotFound",
              "the server could not find the requested resource",
              `GET /apis/apps.edgeroll.dev/v1alpha1/${kind}`,
            ),
          )
          : next({ kind }),
    },
  });
  const res = await h.request("/tick?full=true");
  const body = await res.json();
  assertEquals([res.status, body.error.reason], [502, "KubernetesNotFound"]);
  assertStringIncludes(
    body.error.message,
    "GET /apis/apps.edgeroll.dev/v1alpha1/advanceddaemonsets",
  );
  assertEquals(h.logs.lines.some((l) => l.level === "error" && l.status === 502), true);
});
