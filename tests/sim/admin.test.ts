/**
 * The `/sim/v1` admin API (faults, stats, node verbs) and the raw HTTP shapes no client
 * library exposes: Table responses, discovery, auth.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals, assertMatch } from "@std/assert";
import { apiCode, request, stillCluster, withSim } from "./helpers.ts";
import { eventually } from "../../lib/eventually.ts";

const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

Deno.test("admin: a bad fault configuration is a 400 with zod issues, and changes nothing", async () => {
  await withSim({}, async (sim) => {
    const bad = await request(sim, "/sim/v1/faults", {
      method: "PUT",
      body: JSON.stringify({ errors: [{ verb: "list", code: 418, rate: 2 }], latencyMs: -1 }),
    });
    assertEquals(bad.status, 400);
    const paths = bad.body.issues.map((i: { path: (string | number)[] }) => i.path.join("."));
    assertEquals(paths.includes("errors.0.code") && paths.includes("errors.0.rate"), true);
    assertEquals(paths.includes("latencyMs"), true);
    assertEquals((await request(sim, "/sim/v1/faults")).body.errors, []);
  });
});

Deno.test("admin: injected 500 and 429 answer per verb and resource; stats count requests", async () => {
  await withSim({}, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const put = await request(sim, "/sim/v1/faults", {
      method: "PUT",
      body: JSON.stringify({
        errors: [
          { verb: "list", resource: "pods", code: 500, rate: 1 },
          { verb: "get", resource: "nodes", code: 429, rate: 1 },
        ],
      }),
    });
    assertEquals(put.status, 200);
    const failing = await core.listNamespacedPod({ namespace: "default" }).catch(apiCode);
    assertEquals(failing, 500);
    const throttled = await fetch(`${sim.url}/api/v1/nodes/edge-1`);
    assertEquals([throttled.status, throttled.headers.get("retry-after")], [429, "1"]);
    assertEquals((await throttled.json()).reason, "TooManyRequests");
    const nodes = await core.listNode();
    assertEquals(nodes.items.length, 3, "other verbs are served");
    const stats = (await request(sim, "/sim/v1/stats")).body;
    assertEquals(stats.requests.byResource.pods.list, 1);
    assertEquals(stats.requests.byResource.nodes, { get: 1, list: 1 });
    assertEquals(stats.objects.byResource.nodes, 3);
    assertEquals(stats.watches, 0);
    assertEquals(typeof stats.writes, "number");
  });
});

Deno.test("admin: node verbs reach the cluster behaviour; unknown nodes are 404", async () => {
  await withSim({}, async (sim) => {
    const readyOf = () =>
      (sim.store.get("nodes", undefined, "edge-2").status as {
        conditions: { type: string; status: string }[];
      }).conditions.find((c) => c.type === "Ready")?.status;
    assertEquals(
      (await request(sim, "/sim/v1/nodes/edge-2/notready", { method: "POST" })).status,
      200,
    );
    assertEquals(readyOf(), "False");
    await request(sim, "/sim/v1/nodes/edge-2/ready", { method: "POST" });
    assertEquals(readyOf(), "True");
    const missing = await request(sim, "/sim/v1/nodes/edge-99/ready", { method: "POST" });
    assertEquals([missing.status, missing.body.reason], [404, "NotFound"]);
  });
});

Deno.test("http: pod Table has kubectl's columns, wide ones at priority 1", async () => {
  await withSim({ behaviour: stillCluster }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "p" },
        spec: {
          nodeName: "ghost",
          containers: [{ name: "a", image: "x" }, { name: "b", image: "y" }],
        },
      },
    });
    const { body } = await request(sim, "/api/v1/namespaces/default/pods?includeObject=Object", {
      headers: { accept: TABLE },
    });
    assertEquals(body.kind, "Table");
    const columns = body.columnDefinitions.map((c: { name: string; priority: number }) =>
      `${c.name}:${c.priority}`
    );
    assertEquals(columns.slice(0, 6), [
      "Name:0",
      "Ready:0",
      "Status:0",
      "Restarts:0",
      "Age:0",
      "IP:1",
    ]);
    assertEquals(body.rows[0].cells.slice(0, 4), ["p", "0/2", "Pending", "0"]);
    assertEquals(body.rows[0].cells[6], "ghost");
    assertEquals(body.rows[0].object.metadata.name, "p");
    const generic = await request(sim, "/api/v1/namespaces/default/configmaps", {
      headers: { accept: TABLE },
    });
    assertEquals(generic.body.columnDefinitions.map((c: { name: string }) => c.name), [
      "Name",
      "Age",
    ]);
  });
});

Deno.test("http: aggregated discovery, a wrong token is 401, anonymous is served", async () => {
  await withSim({}, async (sim) => {
    const aggregated = await fetch(`${sim.url}/apis`, {
      headers: { accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" },
    });
    assertEquals(
      aggregated.headers.get("content-type")?.includes("as=APIGroupDiscoveryList"),
      true,
    );
    const groups = (await aggregated.json()).items.map((g: { metadata: { name: string } }) =>
      g.metadata.name
    );
    assertEquals(groups.includes("apps") && groups.includes("apiextensions.k8s.io"), true);
    const wrong = await request(sim, "/api/v1/nodes", {
      headers: { authorization: "Bearer wrong" },
    });
    assertEquals([wrong.status, wrong.body.reason], [401, "Unauthorized"]);
    const right = await request(sim, "/api/v1/nodes", {
      headers: { authorization: `Bearer ${sim.token}` },
    });
    assertEquals(right.status, 200);
    assertEquals((await request(sim, "/api/v1/nodes")).status, 200);
    assertEquals((await request(sim, "/apis/nothing.example/v1/things")).status, 404);
  });
});

Deno.test("admin: a disconnected node goes NotReady, its pod's delete waits for reconnect", async () => {
  await withSim({ nodes: 2, speed: 100 }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "p" },
        spec: { nodeName: "edge-1", containers: [{ name: "c", image: "registry.local/app:1" }] },
      },
    });
    const phase = () =>
      (sim.store.tryGet("pods", "default", "p")?.status as { phase?: string })?.phase;
    await eventually("the pod to run", () => phase() === "Running");
    const ready = () =>
      (sim.store.get("nodes", undefined, "edge-1").status as {
        conditions: { type: string; status: string }[];
      }).conditions.find((c) => c.type === "Ready")?.status;
    assertEquals(
      (await request(sim, "/sim/v1/nodes/edge-1/disconnect", { method: "POST" })).status,
      200,
    );
    await eventually("the node to go Unknown after the grace period", () => ready() === "Unknown");
    await core.deleteNamespacedPod({ namespace: "default", name: "p" });
    const waiting = sim.store.tryGet("pods", "default", "p");
    assertEquals(typeof waiting?.metadata.deletionTimestamp, "string", "the delete waits");
    await request(sim, "/sim/v1/nodes/edge-1/reconnect", { method: "POST" });
    await eventually(
      "the kubelet to confirm",
      () => sim.store.tryGet("pods", "default", "p") === undefined,
    );
    await eventually("the node to be Ready again", () => ready() === "True");
  });
});

Deno.test("http: deletecollection by label, namespace deletion empties it, watch timeoutSeconds ends the stream", async () => {
  await withSim({ behaviour: stillCluster }, async (sim, kc) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "scratch" } } });
    for (const [name, tier] of [["a", "x"], ["b", "x"], ["c", "y"]]) {
      await core.createNamespacedConfigMap({
        namespace: "scratch",
        body: { metadata: { name, labels: { tier } } },
      });
    }
    await core.deleteCollectionNamespacedConfigMap({
      namespace: "scratch",
      labelSelector: "tier=x",
    });
    assertEquals(
      sim.store.scan("configmaps", { namespace: "scratch" }).map((c) => c.metadata.name).sort(),
      ["c", "kube-root-ca.crt"],
    );
    const started = await fetch(
      `${sim.url}/api/v1/namespaces/scratch/configmaps?watch=1&timeoutSeconds=1`,
    );
    const lines = (await started.text()).trim().split("\n").map((l) => JSON.parse(l));
    // As on a cluster: the root CA ConfigMap kube-controller-manager keeps in each namespace.
    assertEquals(lines.map((e) => `${e.type} ${e.object.metadata.name}`).sort(), [
      "ADDED c",
      "ADDED kube-root-ca.crt",
    ]);
    await core.deleteNamespace({ name: "scratch" });
    await eventually(
      "the namespace's contents to go",
      () => sim.store.scan("configmaps", { namespace: "scratch" }).length === 0,
    );
    const refused = await request(sim, "/api/v1/namespaces/scratch/configmaps", {
      method: "POST",
      body: JSON.stringify({ metadata: { name: "late" } }),
    });
    assertEquals(refused.status, 404);
  });
});

Deno.test("http: events print as kubectl get events does", async () => {
  await withSim({ behaviour: stillCluster }, async (sim) => {
    sim.store.create("events", {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "e", namespace: "default" },
      involvedObject: { kind: "Pod", name: "p", namespace: "default" },
      type: "Warning",
      reason: "BackOff",
      message: "Back-off pulling image",
      source: { component: "kubelet" },
      count: 3,
    });
    const { body } = await request(sim, "/api/v1/namespaces/default/events", {
      headers: { accept: TABLE },
    });
    const names = body.columnDefinitions.map((c: { name: string }) => c.name);
    assertEquals(names.slice(0, 4), ["Last Seen", "Type", "Reason", "Object"]);
    const cells = body.rows[0].cells;
    assertEquals([cells[1], cells[2], cells[3], cells[6]], [
      "Warning",
      "BackOff",
      "pod/p",
      "Back-off pulling image",
    ]);
  });
});

Deno.test("admin: watchDropSeconds cuts open watches; speed reaches the cluster behaviour", async () => {
  await withSim({}, async (sim) => {
    const put = await request(sim, "/sim/v1/faults", {
      method: "PUT",
      body: JSON.stringify({ watchDropSeconds: 0.2, speed: 7 }),
    });
    assertEquals(put.status, 200);
    assertEquals((sim.behaviour as unknown as { speed: number }).speed, 7);
    // No timeoutSeconds: only the injected drop can end this stream.
    const watch = await fetch(`${sim.url}/api/v1/nodes?watch=1`);
    const events = (await watch.text()).trim().split("\n").map((l) => JSON.parse(l));
    assertEquals(events.slice(0, 3).map((e) => `${e.type} ${e.object.metadata.name}`), [
      "ADDED edge-1",
      "ADDED edge-2",
      "ADDED edge-3",
    ]);
    assertEquals((await request(sim, "/sim/v1/stats")).body.watches, 0);
  });
});

Deno.test("http: generateName creates a suffixed name; system namespaces may not be deleted", async () => {
  await withSim({ behaviour: stillCluster }, async (sim) => {
    const created = await request(sim, "/api/v1/namespaces/default/configmaps", {
      method: "POST",
      body: JSON.stringify({ metadata: { generateName: "cfg-" } }),
    });
    assertEquals(created.status, 201);
    assertMatch(created.body.metadata.name, /^cfg-[a-z0-9]{5}$/);
    const refused = await request(sim, "/api/v1/namespaces/kube-system", { method: "DELETE" });
    assertEquals([refused.status, refused.body.reason], [403, "Forbidden"]);
  });
});

Deno.test("http: field selectors accept the fields kube-apiserver supports, 400 for others", async () => {
  await withSim({ behaviour: stillCluster }, async (sim) => {
    const ok = await request(
      sim,
      "/api/v1/pods?fieldSelector=spec.nodeName%3Dedge-1,status.phase!%3DFailed",
    );
    assertEquals(ok.status, 200);
    const bad = await request(sim, "/api/v1/pods?fieldSelector=spec.containers%3Dx");
    assertEquals([bad.status, bad.body.message], [
      400,
      "field label not supported: spec.containers",
    ]);
    const events = await request(
      sim,
      "/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dp",
    );
    assertEquals(events.status, 200);
  });
});
