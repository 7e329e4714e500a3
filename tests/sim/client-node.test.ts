/**
 * Fidelity of the simulator as @kubernetes/client-node sees it: verbs, selectors, paging,
 * conflicts, patch types, watch (resume, bookmarks, 410), GC, finalizers, Tables, CRDs.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals, assertRejects } from "@std/assert";
import { collectWatch, request, statusOf, stillCluster, withSim } from "./helpers.ts";
import { eventually } from "../../lib/eventually.ts";

/** A pod no simulated scheduler picks up, so it holds still unless a test moves it. */
function pod(name: string, labels: Record<string, string> = {}): k8s.V1Pod {
  return {
    metadata: { name, labels },
    spec: { schedulerName: "manual", containers: [{ name: "c", image: "registry.local/app:1" }] },
  };
}

function configMap(name: string, labels: Record<string, string> = {}): k8s.V1ConfigMap {
  return { metadata: { name, labels }, data: { key: name } };
}

Deno.test("client-node: create, get, list with selectors and paging", async () => {
  await withSim({ nodes: 4 }, async (_sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 5; i++) {
      await core.createNamespacedPod({
        namespace: "default",
        body: pod(`p${i}`, { app: "web", parity: i % 2 ? "odd" : "even" }),
      });
    }
    const even = await core.listNamespacedPod({
      namespace: "default",
      labelSelector: "parity=even",
    });
    assertEquals(even.items.map((p) => p.metadata?.name), ["p0", "p2", "p4"]);
    const byName = await core.listNamespacedPod({
      namespace: "default",
      fieldSelector: "metadata.name=p3",
    });
    assertEquals(byName.items.map((p) => p.metadata?.name), ["p3"]);
    const first = await core.listNamespacedPod({ namespace: "default", limit: 2 });
    assertEquals(first.items.length, 2);
    assertEquals(first.metadata?.remainingItemCount, 3);
    const rest = await core.listNamespacedPod({
      namespace: "default",
      limit: 10,
      _continue: first.metadata?._continue,
    });
    assertEquals(rest.items.map((p) => p.metadata?.name), ["p2", "p3", "p4"]);
    assertEquals(rest.metadata?._continue, undefined);
    const nodes = await core.listNode();
    assertEquals(nodes.items.map((n) => n.metadata?.name), [
      "edge-1",
      "edge-2",
      "edge-3",
      "edge-4",
    ]);
    const created = await core.readNamespacedPod({ namespace: "default", name: "p1" });
    assertEquals(created.status?.phase, "Pending");
    assertEquals(created.spec?.restartPolicy, "Always");
  });
});

Deno.test("client-node: AlreadyExists, stale resourceVersion Conflict, NotFound are Status objects", async () => {
  await withSim({}, async (_sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const created = await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "cfg" }, data: { a: "1" } },
    });
    const exists = await statusOf(core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "cfg" } },
    }));
    assertEquals([exists.code, exists.body.reason, exists.body.details.name], [
      409,
      "AlreadyExists",
      "cfg",
    ]);
    await core.replaceNamespacedConfigMap({
      namespace: "default",
      name: "cfg",
      body: { ...created, data: { a: "2" } },
    });
    const stale = await statusOf(core.replaceNamespacedConfigMap({
      namespace: "default",
      name: "cfg",
      body: { ...created, data: { a: "3" } },
    }));
    assertEquals([stale.code, stale.body.reason, stale.body.kind], [409, "Conflict", "Status"]);
    const missing = await statusOf(
      core.readNamespacedConfigMap({ namespace: "default", name: "x" }),
    );
    assertEquals([missing.code, missing.body.reason], [404, "NotFound"]);
    const noNamespace = await statusOf(core.createNamespacedConfigMap({
      namespace: "nowhere",
      body: { metadata: { name: "cfg" } },
    }));
    assertEquals(noNamespace.body.message, 'namespaces "nowhere" not found');
    const uidPrecondition = await statusOf(core.deleteNamespacedConfigMap({
      namespace: "default",
      name: "cfg",
      body: { preconditions: { uid: "not-the-uid" } },
    }));
    assertEquals(uidPrecondition.code, 409);
  });
});

Deno.test("client-node: json, merge and strategic merge patches; status subresource split", async () => {
  await withSim({}, async (_sim, kc) => {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const header = (type: string) => k8s.setHeaderOptions("Content-Type", type);
    await apps.createNamespacedDaemonSet({
      namespace: "default",
      body: {
        metadata: { name: "agent" },
        spec: {
          selector: { matchLabels: { app: "agent" } },
          template: {
            metadata: { labels: { app: "agent" } },
            spec: {
              containers: [{
                name: "agent",
                image: "a:1",
                env: [{ name: "A", value: "1" }, { name: "B", value: "2" }],
              }],
            },
          },
        },
      },
    });
    const jsonPatched = await apps.patchNamespacedDaemonSet({
      namespace: "default",
      name: "agent",
      body: [{ op: "replace", path: "/spec/template/spec/containers/0/image", value: "a:2" }],
    });
    assertEquals(jsonPatched.metadata?.generation, 2);
    const merged = await apps.patchNamespacedDaemonSet({
      namespace: "default",
      name: "agent",
      body: { metadata: { annotations: { note: "x" } }, status: { numberReady: 99 } },
    }, header(k8s.PatchStrategy.MergePatch));
    assertEquals(merged.metadata?.annotations?.note, "x");
    assertEquals(merged.metadata?.generation, 2, "metadata changes do not move generation");
    assertEquals(merged.status?.numberReady, 0, "the main resource ignores status");
    const strategic = await apps.patchNamespacedDaemonSet({
      namespace: "default",
      name: "agent",
      body: {
        spec: {
          template: {
            spec: {
              containers: [{
                name: "agent",
                env: [{ name: "B", $patch: "delete" }, { name: "C", value: "3" }],
              }],
            },
          },
        },
      },
    }, header(k8s.PatchStrategy.StrategicMergePatch));
    const container = strategic.spec?.template.spec?.containers[0];
    assertEquals(container?.image, "a:2");
    assertEquals(container?.env?.map((e) => e.name), ["A", "C"]);
    const status = await apps.patchNamespacedDaemonSetStatus({
      namespace: "default",
      name: "agent",
      body: { status: { numberReady: 3 }, spec: { minReadySeconds: 50 } },
    }, header(k8s.PatchStrategy.MergePatch));
    assertEquals(status.status?.numberReady, 3);
    assertEquals(status.spec?.minReadySeconds, undefined, "the status subresource ignores spec");
    const failedTest = await statusOf(apps.patchNamespacedDaemonSet({
      namespace: "default",
      name: "agent",
      body: [{ op: "test", path: "/spec/minReadySeconds", value: 7 }],
    }));
    assertEquals(failedTest.code, 422);
  });
});

Deno.test("client-node: server-side apply creates, owns, removes dropped fields, conflicts", async () => {
  await withSim({}, async (_sim, kc) => {
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    const config = (data: Record<string, string>) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: "default" },
      data,
    });
    await objects.patch(
      config({ a: "1", b: "2" }),
      undefined,
      undefined,
      "alice",
      undefined,
      k8s.PatchStrategy.ServerSideApply,
    );
    const second = await objects.patch(
      config({ a: "1" }),
      undefined,
      undefined,
      "alice",
      undefined,
      k8s.PatchStrategy.ServerSideApply,
    ) as k8s.V1ConfigMap;
    assertEquals(second.data, { a: "1" });
    await objects.patch(
      config({ a: "1", c: "3" }),
      undefined,
      undefined,
      "alice",
      undefined,
      k8s.PatchStrategy.ServerSideApply,
    );
    const conflict = await statusOf(
      objects.patch(
        config({ a: "9" }),
        undefined,
        undefined,
        "bob",
        undefined,
        k8s.PatchStrategy.ServerSideApply,
      ),
    );
    assertEquals([conflict.code, conflict.body.details.causes[0].field], [409, ".data.a"]);
    const forced = await objects.patch(
      config({ a: "9" }),
      undefined,
      undefined,
      "bob",
      true,
      k8s.PatchStrategy.ServerSideApply,
    ) as k8s.V1ConfigMap;
    assertEquals(forced.data, { a: "9", c: "3" });
    assertEquals(forced.metadata?.managedFields?.map((m) => m.manager).sort(), ["alice", "bob"]);
  });
});

Deno.test("client-node: watch resumes from a resourceVersion, sends bookmarks, 410 after compaction", async () => {
  await withSim({ bookmarkIntervalMs: 20 }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("a") });
    const from = (await core.listNamespacedConfigMap({ namespace: "default" })).metadata
      ?.resourceVersion;
    await core.createNamespacedConfigMap({ namespace: "default", body: configMap("b") });
    await core.deleteNamespacedConfigMap({ namespace: "default", name: "a" });
    const resumed = await collectWatch(
      kc,
      "/api/v1/namespaces/default/configmaps",
      { resourceVersion: from!, allowWatchBookmarks: true },
      (events) => events.some(([type]) => type === "BOOKMARK"),
    );
    assertEquals(
      resumed.filter(([type]) => type !== "BOOKMARK").map(([type, o]) =>
        `${type} ${o.metadata.name}`
      ),
      ["ADDED b", "DELETED a"],
    );
    const put = await request(sim, "/sim/v1/faults", {
      method: "PUT",
      body: JSON.stringify({ compact: true }),
    });
    assertEquals(put.status, 200);
    const gone = await collectWatch(
      kc,
      "/api/v1/namespaces/default/configmaps",
      { resourceVersion: from! },
      (events) => events.length > 0,
    );
    assertEquals(gone[0][0], "ERROR");
    assertEquals([gone[0][1].code, gone[0][1].reason], [410, "Expired"]);
  });
});

Deno.test("client-node: a watch with a label selector sees an object leave it as DELETED", async () => {
  await withSim({}, async (_sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: "default",
      body: configMap("a", { app: "web" }),
    });
    const events = await collectWatch(
      kc,
      "/api/v1/namespaces/default/configmaps",
      { labelSelector: "app=web" },
      (events) => events.length >= 2,
      async () => {
        await core.patchNamespacedConfigMap({
          namespace: "default",
          name: "a",
          body: [{ op: "replace", path: "/metadata/labels/app", value: "db" }],
        });
      },
    );
    assertEquals(events.map(([type, o]) => `${type} ${o.metadata.name}`), ["ADDED a", "DELETED a"]);
  });
});

Deno.test("client-node: ownerReferences are garbage-collected (background, foreground, orphan)", async () => {
  // ConfigMaps own Secrets here: no simulated controller touches either kind.
  await withSim({}, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const dependent = (name: string) => sim.store.tryGet("secrets", "default", `${name}-secret`);
    const owner = (name: string) => sim.store.tryGet("configmaps", "default", name);
    /** ConfigMap `name` owning Secret `<name>-secret`, then deleted with `policy`. */
    const ownAndDelete = async (name: string, policy: "Background" | "Foreground" | "Orphan") => {
      const created = await core.createNamespacedConfigMap({
        namespace: "default",
        body: configMap(name),
      });
      await core.createNamespacedSecret({
        namespace: "default",
        body: {
          metadata: {
            name: `${name}-secret`,
            // Holds the dependent, so the owner's foreground wait is seen, not raced.
            finalizers: policy === "Foreground" ? ["example.com/hold"] : undefined,
            ownerReferences: [{
              apiVersion: "v1",
              kind: "ConfigMap",
              name,
              uid: created.metadata!.uid!,
              blockOwnerDeletion: true,
            }],
          },
        },
      });
      await core.deleteNamespacedConfigMap({
        namespace: "default",
        name,
        body: { propagationPolicy: policy },
      });
    };

    await ownAndDelete("bg", "Background");
    assertEquals(owner("bg"), undefined, "a background delete removes the owner at once");
    await eventually("background GC", () => !dependent("bg"));

    await ownAndDelete("fg", "Foreground");
    await eventually(
      "foreground GC deletes the dependent",
      () => dependent("fg")?.metadata.deletionTimestamp !== undefined,
    );
    assertEquals(owner("fg")?.metadata.finalizers, ["foregroundDeletion"]);
    await core.patchNamespacedSecret({
      namespace: "default",
      name: "fg-secret",
      body: { metadata: { finalizers: null } },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await eventually("the dependent goes once released", () => !dependent("fg"));
    await eventually("owner removal after its dependents", () => !owner("fg"));

    await ownAndDelete("or", "Orphan");
    await eventually("orphaning owner removal", () => !owner("or"));
    assertEquals(dependent("or")?.metadata.ownerReferences, undefined);
  });
});

Deno.test("client-node: finalizers hold a delete; bound pods wait for the kubelet", async () => {
  await withSim({ behaviour: stillCluster }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: "default",
      body: { metadata: { name: "held", finalizers: ["example.com/hold"] } },
    });
    await core.deleteNamespacedConfigMap({ namespace: "default", name: "held" });
    const held = await core.readNamespacedConfigMap({ namespace: "default", name: "held" });
    assertEquals(typeof held.metadata?.deletionTimestamp, "object");
    await core.patchNamespacedConfigMap({
      namespace: "default",
      name: "held",
      body: { metadata: { finalizers: null } },
    }, k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch));
    await assertRejects(() => core.readNamespacedConfigMap({ namespace: "default", name: "held" }));

    const bound = pod("bound");
    bound.spec!.nodeName = "edge-1"; // no kubelet here confirms the delete
    await core.createNamespacedPod({ namespace: "default", body: bound });
    const terminating = await core.deleteNamespacedPod({ namespace: "default", name: "bound" });
    assertEquals(terminating.metadata?.deletionGracePeriodSeconds, 30);
    assertEquals(sim.store.tryGet("pods", "default", "bound") !== undefined, true);
    await core.deleteNamespacedPod({ namespace: "default", name: "bound", gracePeriodSeconds: 0 });
    assertEquals(sim.store.tryGet("pods", "default", "bound"), undefined);
  });
});

Deno.test("client-node: eviction and binding subresources", async () => {
  await withSim({}, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({ namespace: "default", body: pod("p") });
    await core.createNamespacedBinding({
      namespace: "default",
      body: { metadata: { name: "p" }, target: { kind: "Node", name: "edge-2" } },
    });
    assertEquals(
      (sim.store.get("pods", "default", "p").spec as { nodeName: string }).nodeName,
      "edge-2",
    );
    const again = await request(sim, "/api/v1/namespaces/default/pods/p/binding", {
      method: "POST",
      body: JSON.stringify({ metadata: { name: "p" }, target: { kind: "Node", name: "edge-3" } }),
    });
    assertEquals(again.status, 409);
    await core.createNamespacedPodEviction({
      namespace: "default",
      name: "p",
      body: { metadata: { name: "p" }, deleteOptions: { gracePeriodSeconds: 0 } },
    });
    assertEquals(sim.store.tryGet("pods", "default", "p"), undefined);
  });
});

Deno.test("client-node: TokenReview answers for the configured tokens", async () => {
  await withSim(
    { tokens: { "t-admin": { username: "admin", groups: ["system:masters"] } } },
    async (_sim, kc) => {
      const auth = kc.makeApiClient(k8s.AuthenticationV1Api);
      const good = await auth.createTokenReview({ body: { spec: { token: "t-admin" } } });
      assertEquals([good.status?.authenticated, good.status?.user?.username], [true, "admin"]);
      const bad = await auth.createTokenReview({ body: { spec: { token: "nope" } } });
      assertEquals(bad.status?.authenticated, undefined);
    },
  );
});

Deno.test("client-node: events written as events.k8s.io/v1 read back as core v1", async () => {
  await withSim({}, async (_sim, kc) => {
    const events = kc.makeApiClient(k8s.EventsV1Api);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await events.createNamespacedEvent({
      namespace: "default",
      body: {
        metadata: { name: "e1" },
        eventTime: new Date("2026-01-01T00:00:00Z"),
        reason: "Progressing",
        note: "rolled 3 of 10",
        type: "Normal",
        action: "Update",
        reportingController: "edgeroll",
        reportingInstance: "edgeroll-0",
        regarding: { kind: "DaemonSet", name: "agent", namespace: "default" },
      },
    });
    const core1 = await core.readNamespacedEvent({ namespace: "default", name: "e1" });
    assertEquals([core1.message, core1.involvedObject.name], ["rolled 3 of 10", "agent"]);
    const back = await events.readNamespacedEvent({ namespace: "default", name: "e1" });
    assertEquals(back.note, "rolled 3 of 10");
  });
});

Deno.test("client-node: custom resources get status subresource semantics and refuse strategic merge", async () => {
  await withSim({ behaviour: stillCluster }, async (sim, kc) => {
    const extensions = kc.makeApiClient(k8s.ApiextensionsV1Api);
    await extensions.createCustomResourceDefinition({
      body: {
        metadata: { name: "gadgets.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "gadgets", singular: "gadget", kind: "Gadget" },
          versions: [{
            name: "v1",
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: "object",
                properties: {
                  spec: { type: "object", properties: { size: { type: "integer" } } },
                  status: { type: "object", properties: { seen: { type: "integer" } } },
                },
              },
            },
          }],
        },
      },
    });
    const crd = await extensions.readCustomResourceDefinition({ name: "gadgets.example.com" });
    assertEquals(crd.status?.conditions?.find((c) => c.type === "Established")?.status, "True");
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const target = { group: "example.com", version: "v1", namespace: "default", plural: "gadgets" };
    const created = await custom.createNamespacedCustomObject({
      ...target,
      body: {
        apiVersion: "example.com/v1",
        kind: "Gadget",
        metadata: { name: "g" },
        spec: { size: 1, unknown: true },
        status: { seen: 5 },
      },
    });
    assertEquals(created.status, undefined, "create drops status when /status exists");
    assertEquals(created.spec, { size: 1 }, "unknown fields are pruned");
    const status = await custom.patchNamespacedCustomObjectStatus(
      { ...target, name: "g", body: { status: { seen: 2 }, spec: { size: 9 } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    assertEquals([status.status.seen, status.spec.size, status.metadata.generation], [2, 1, 1]);
    const strategic = await request(sim, "/apis/example.com/v1/namespaces/default/gadgets/g", {
      method: "PATCH",
      headers: { "content-type": "application/strategic-merge-patch+json" },
      body: JSON.stringify({ spec: { size: 3 } }),
    });
    assertEquals([strategic.status, strategic.body.reason], [415, "UnsupportedMediaType"]);
  });
});

Deno.test("client-node: an informer recovers from a forced 410 by relisting", async () => {
  await withSim({ behaviour: stillCluster }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const informer = k8s.makeInformer(
      kc,
      "/api/v1/namespaces/default/configmaps",
      () => core.listNamespacedConfigMap({ namespace: "default" }),
    );
    const added: string[] = [];
    informer.on("add", (cm) => added.push(cm.metadata!.name!));
    informer.on("error", () => {
      // client-node informers stop on error; a caller restarts them, as ours do.
      setTimeout(() => informer.start(), 10);
    });
    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: "default", body: configMap("before") });
      await eventually("the informer to see the first object", () => added.includes("before"));
      // Compaction closes every watch; the informer's resume finds its version gone.
      await request(sim, "/sim/v1/faults", {
        method: "PUT",
        body: JSON.stringify({ compact: true }),
      });
      await core.createNamespacedConfigMap({ namespace: "default", body: configMap("after") });
      await eventually("the informer to relist and see the next", () => added.includes("after"));
      assertEquals(informer.list().map((c) => c.metadata?.name).sort(), [
        "after",
        "before",
        "kube-root-ca.crt",
      ]);
    } finally {
      await informer.stop();
    }
  });
});
