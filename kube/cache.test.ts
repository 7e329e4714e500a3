import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { type CacheChange, isAtLeast, SnapshotCache } from "./cache.ts";
import { pullSetLabel } from "../api/image-pull.ts";
import type { KubeList, KubeObject } from "./wire-objects.ts";
import type { WatchFn } from "./watcher.ts";
import type { CachedForm } from "./wire-objects.ts";

type OnLine = (type: string, object: unknown) => void;
type Done = (err: unknown) => void;

/** Watches held open until the test speaks on them; lists answered from `listed`. */
function fakeServer() {
  const watches: { path: string; query: Record<string, unknown>; onLine: OnLine; done: Done }[] =
    [];
  const listed: Record<string, KubeObject[]> = { nodes: [], pods: [], daemonsets: [] };
  let rv = 10;
  const answer = (items: KubeObject[], form?: CachedForm): Promise<KubeList> =>
    Promise.resolve({
      items: structuredClone(items).map((item) => form ? form.keep(item) : item),
      resourceVersion: String(rv++),
    });
  const watch: WatchFn = (path, query, onLine, done) => {
    watches.push({ path, query, onLine, done });
    return Promise.resolve(new AbortController());
  };
  return {
    watches,
    listed,
    api: {
      listNodes: ({ form }: { form?: CachedForm }) => answer(listed.nodes, form),
      listPods: ({ form }: { form?: CachedForm }) => answer(listed.pods, form),
      listSets: ({ kind }: { kind: string }) => answer(listed[kind] ?? []),
      listRevisions: () => answer(listed.controllerrevisions ?? []),
    },
    watch,
  };
}

const node = (name: string, rv: string, ready = "True"): KubeObject => ({
  metadata: { name, resourceVersion: rv },
  status: { conditions: [{ type: "Ready", status: ready }] },
});

/** Until `read` answers: the cache has listed and its watch is open. */
const opened = <T>(read: () => T | undefined) => eventually("the cache open", read);

Deno.test("a cache answers only once listed and watching, then follows the watch", async () => {
  const server = fakeServer();
  server.listed.nodes = [node("a", "1"), node("b", "2")];
  const changes: CacheChange[] = [];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  cache.onChange((change) => changes.push(change));
  try {
    assertEquals(cache.nodes(), undefined, "the first read starts the cache and lists");
    await opened(() => cache.nodes());
    assertEquals(server.watches.length, 1);
    assertEquals(server.watches[0].query.resourceVersion, "10", "watched from the list's RV");
    assertEquals(cache.nodes()?.map((n) => [n.kind, n.metadata.name]), [
      ["Node", "a"],
      ["Node", "b"],
    ]);

    const { onLine } = server.watches[0];
    onLine("MODIFIED", { kind: "Node", ...node("a", "11", "False") });
    onLine("DELETED", { kind: "Node", ...node("b", "12") });
    onLine("ADDED", { kind: "Node", ...node("c", "13") });
    const ready = (n: KubeObject) =>
      (n.status as { conditions: { status: string }[] }).conditions[0].status;
    assertEquals(cache.nodes()?.map((n) => `${n.metadata.name}:${ready(n)}`), [
      "a:False",
      "c:True",
    ]);
    assertEquals(
      changes.map((c) => `${c.object.metadata.name}:${c.deleted}`),
      ["a:false", "b:true", "c:false"],
    );
  } finally {
    await cache.close();
  }
});

Deno.test("a failed watch makes the cache answer undefined until the next watch is open", async () => {
  const server = fakeServer();
  server.listed.nodes = [node("a", "1")];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  try {
    cache.nodes();
    await opened(() => cache.nodes());
    assertEquals(cache.nodes()?.length, 1);
    server.watches[0].done(new Error("connection reset"));
    assertEquals(cache.nodes(), undefined, "read past a broken watch: the reader lists");
    // After the watcher's first backoff.
    await opened(() => server.watches.length === 2 && cache.nodes());
    assertEquals(server.watches.length, 2);
    assertEquals(server.watches[1].query.resourceVersion, "10", "resumed, not relisted");
    assertEquals(cache.nodes()?.length, 1);
  } finally {
    await cache.close();
  }
});

Deno.test("410 Gone relists: what changed or vanished meanwhile is applied and reported", async () => {
  const server = fakeServer();
  server.listed.nodes = [node("a", "1"), node("b", "2"), node("c", "3")];
  const changes: CacheChange[] = [];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  cache.onChange((change) => changes.push(change));
  try {
    cache.nodes();
    await opened(() => cache.nodes());
    assertEquals(changes, [], "the first list replaces nothing anyone read");
    // While the watch was away: a went NotReady, b was deleted, d joined, c stayed.
    server.listed.nodes = [node("a", "20", "False"), node("c", "3"), node("d", "21")];
    server.watches[0].onLine("ERROR", { code: 410, reason: "Expired" });
    await opened(() => server.watches.length === 2 && cache.nodes());
    assertEquals(server.watches.length, 2);
    assertEquals(server.watches[1].query.resourceVersion, "11", "watched from the new list");
    assertEquals(cache.nodes()?.map((n) => n.metadata.name), ["a", "c", "d"]);
    assertEquals(
      changes.map((c) => `${c.object.kind}/${c.object.metadata.name}:${c.deleted}`),
      ["Node/a:false", "Node/d:false", "Node/b:true"],
      "the events the watch missed, as an informer's Replace reports them",
    );
  } finally {
    await cache.close();
  }
});

Deno.test("a set's pods are cached by namespace and selector; an unread cache is stopped", async () => {
  const server = fakeServer();
  server.listed.pods = [{ metadata: { name: "p", namespace: "edge", resourceVersion: "3" } }];
  let now = 0;
  const cache = new SnapshotCache({
    api: server.api,
    watch: server.watch,
    logger: memoryLogger(),
    unusedMs: 60_000,
    clock: () => now,
  });
  try {
    cache.pods("edge", "app=agent");
    cache.pods("edge", "app=other");
    await opened(() => cache.pods("edge", "app=agent") && cache.pods("edge", "app=other"));
    assertEquals(
      server.watches.map((w) => [w.path, w.query.labelSelector]),
      [["/api/v1/namespaces/edge/pods", "app=agent"], [
        "/api/v1/namespaces/edge/pods",
        "app=other",
      ]],
    );
    assertEquals(cache.pods("edge", "app=agent")?.items.map((p) => [p.kind, p.metadata.name]), [
      ["Pod", "p"],
    ]);
    now = 30_000;
    cache.pods("edge", "app=agent");
    now = 70_000; // app=other unread for 70 s, app=agent for 40 s
    cache.pods("edge", "app=agent");
    assertEquals(cache.size, 1);
  } finally {
    await cache.close();
  }
});

Deno.test("pods older than what the set's last status was planned from are not read", async () => {
  const server = fakeServer();
  server.listed.pods = [{ metadata: { name: "p", namespace: "edge", resourceVersion: "3" } }];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  try {
    cache.pods("edge", "app=agent");
    await opened(() => cache.pods("edge", "app=agent"));
    assertEquals(cache.pods("edge", "app=agent", "10")?.resourceVersion, "10", "listed at 10");
    assertEquals(cache.pods("edge", "app=agent", "11"), undefined, "a writer saw 11: list");
    server.watches[0].onLine("ADDED", {
      kind: "Pod",
      metadata: { name: "q", namespace: "edge", resourceVersion: "12" },
    });
    assertEquals(cache.pods("edge", "app=agent", "11")?.items.length, 2, "caught up at 12");
  } finally {
    await cache.close();
  }
});

Deno.test("resourceVersions compare as etcd revisions; anything else is not known to be newer", () => {
  assertEquals(
    [
      isAtLeast("12", "9"),
      isAtLeast("9", "12"),
      isAtLeast("12", "12"),
      isAtLeast("99999999999999999999", "99999999999999999998"),
      isAtLeast("abc", "1"),
      isAtLeast("5", ""),
    ],
    [true, false, true, true, false, false],
  );
});

Deno.test("a cache keeps of each node and pod only what the planner reads", async () => {
  const server = fakeServer();
  const container = { name: "agent", image: "agent:1", command: ["run"], ports: [{ port: 80 }] };
  server.listed.nodes = [{
    apiVersion: "v1",
    metadata: {
      name: "a",
      resourceVersion: "1",
      labels: { zone: "z1" },
      annotations: { big: "x".repeat(1000) },
      managedFields: [{ manager: "kubelet" }],
    } as KubeObject["metadata"],
    spec: { taints: [{ key: "k", effect: "NoSchedule" }], podCIDR: "10.0.0.0/24" },
    status: {
      conditions: [
        { type: "MemoryPressure", status: "False" },
        { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
      images: [{ names: ["agent:1"], sizeBytes: 1 }],
      nodeInfo: { kubeletVersion: "v1.33.0" },
    },
  }];
  server.listed.pods = [{
    apiVersion: "v1",
    metadata: {
      name: "p",
      namespace: "ns",
      labels: { app: "agent" },
      managedFields: [{ manager: "edgeroll" }],
    } as KubeObject["metadata"],
    spec: { nodeName: "a", containers: [container], volumes: [{ name: "token" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [{ name: "agent", image: "agent:1", ready: true, imageID: "sha" }],
      podIP: "10.0.0.5",
    },
  }];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  try {
    cache.nodes();
    cache.pods("ns", "app=agent");
    await opened(() => cache.nodes() && cache.pods("ns", "app=agent"));
    assertEquals(cache.nodes(), [{
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "a", resourceVersion: "1", labels: { zone: "z1" } },
      spec: { taints: [{ key: "k", effect: "NoSchedule" }] },
      status: {
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" }],
      },
    }]);
    assertEquals(cache.pods("ns", "app=agent")?.items, [{
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "ns", labels: { app: "agent" } },
      spec: { nodeName: "a", containers: [container] },
      status: {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True" }],
        containerStatuses: [{ name: "agent", image: "agent:1", ready: true }],
      },
    }]);
  } finally {
    await cache.close();
  }
});

const daemonSet = (name: string, rv: string, extra: Partial<KubeObject> = {}): KubeObject => ({
  metadata: {
    name,
    namespace: "edge",
    resourceVersion: rv,
    annotations: { "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate" },
  },
  spec: { template: { spec: { containers: [{ name: "a", image: "a:1" }] } } },
  ...extra,
});

Deno.test("an inactive cache (a replica without the Lease) reads and watches nothing until activated", async () => {
  const server = fakeServer();
  server.listed.nodes = [node("a", "1")];
  server.listed.daemonsets = [daemonSet("agent", "5")];
  const changes: CacheChange[] = [];
  const cache = new SnapshotCache({
    api: server.api,
    watch: server.watch,
    logger: memoryLogger(),
    active: false,
  });
  cache.onChange((change) => changes.push(change));
  try {
    cache.setKindsServed(["daemonsets"]);
    assertEquals(cache.nodes(), undefined);
    assertEquals(cache.pods("edge", "app=a"), undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assertEquals(server.watches.length, 0, "no watch while inactive");
    assertEquals(cache.active, false);

    cache.activate();
    await opened(() => cache.nodes());
    await eventually("every watch open", () => server.watches.length === 3 || undefined);
    assertEquals(server.watches.map((w) => [w.path, w.query.labelSelector ?? ""]).sort(), [
      ["/api/v1/nodes", ""],
      ["/api/v1/pods", pullSetLabel],
      ["/apis/apps/v1/daemonsets", ""],
    ]);
    // The first list of sets reports each, typed as a watch event's object would be.
    assertEquals(
      changes.map((c) => [c.object.apiVersion, c.object.kind, c.object.metadata.name]),
      [["apps/v1", "DaemonSet", "agent"]],
    );
  } finally {
    await cache.close();
  }
});

Deno.test("a set's change calls a reconcile, a DaemonSet's status written by its controller does not but for the generation it observed", async () => {
  const server = fakeServer();
  server.listed.daemonsets = [daemonSet("agent", "5")];
  const changes: CacheChange[] = [];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  cache.onChange((change) => changes.push(change));
  try {
    cache.setKindsServed(["daemonsets"]);
    await eventually("the set watch open", () => server.watches.length === 1 || undefined);
    await eventually("listed", () => changes.length === 1 || undefined);
    const { onLine } = server.watches[0];
    const typed = (o: KubeObject) => ({ apiVersion: "apps/v1", kind: "DaemonSet", ...o });
    // The DaemonSet controller's status writes: only status and resourceVersion move.
    onLine("MODIFIED", typed(daemonSet("agent", "6", { status: { numberReady: 1 } })));
    onLine("MODIFIED", typed(daemonSet("agent", "7", { status: { numberReady: 2 } })));
    assertEquals(changes.length, 1, "status alone is nothing");
    // But the generation it observed: its revision of the spec is written by then (ADR 0039).
    onLine("MODIFIED", typed(daemonSet("agent", "7", { status: { observedGeneration: 2 } })));
    assertEquals(changes.length, 2, "observedGeneration moved");
    // A user's change of the template, then of an annotation (a pause): each is something.
    const changed = daemonSet("agent", "8");
    (changed.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec
      .containers[0].image = "a:2";
    onLine("MODIFIED", typed(changed));
    const annotated = structuredClone(changed);
    annotated.metadata.resourceVersion = "9";
    annotated.metadata.annotations!["apps.edgeroll.dev/paused"] = "true";
    onLine("MODIFIED", typed(annotated));
    onLine("DELETED", typed(annotated));
    assertEquals(
      changes.map((c) => `${c.object.metadata.resourceVersion}:${c.deleted}`),
      ["5:false", "7:false", "8:false", "9:false", "9:true"],
    );
    cache.setKindsServed([]);
    await eventually("the set watch stopped", () => cache.size === 0 || undefined);
  } finally {
    await cache.close();
  }
});

Deno.test("a set is read from its watch once at least as new as asked; revisions by selector", async () => {
  const server = fakeServer();
  server.listed.daemonsets = [daemonSet("agent", "5")];
  server.listed.controllerrevisions = [{ metadata: { name: "agent-1", resourceVersion: "4" } }];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  const ref = { kind: "daemonsets" as const, namespace: "edge", name: "agent" };
  try {
    cache.setKindsServed(["daemonsets"]);
    const seen = await eventually("the set seen", () => cache.set(ref));
    assertEquals([seen.kind, seen.metadata.resourceVersion], ["DaemonSet", "5"]);
    assertEquals(cache.set(ref, "5")?.metadata.resourceVersion, "5");
    // Our own write left it at 6: the watch's copy at 5 is not read until it has 6.
    assertEquals(cache.set(ref, "6"), undefined);
    const watch = server.watches.find((w) => w.path === "/apis/apps/v1/daemonsets")!;
    watch.onLine("MODIFIED", {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      ...daemonSet("agent", "6"),
    });
    assertEquals(cache.set(ref, "6")?.metadata.resourceVersion, "6");
    // A copy: what a reader does with it is not the cache's.
    cache.set(ref)!.metadata.name = "changed";
    assertEquals(cache.set(ref)?.metadata.name, "agent");
    assertEquals(cache.set({ ...ref, name: "other" }), undefined, "unseen: the reader GETs");

    assertEquals(cache.revisions("edge", "app=agent"), undefined, "the first read starts it");
    const revisions = await opened(() => cache.revisions("edge", "app=agent"));
    assertEquals(revisions.items.map((r) => r.metadata.name), ["agent-1"]);
    const revisionWatch = server.watches.find((w) => w.path.endsWith("/controllerrevisions"))!;
    assertEquals(revisionWatch.path, "/apis/apps/v1/namespaces/edge/controllerrevisions");
    assertEquals(revisionWatch.query.labelSelector, "app=agent");
  } finally {
    await cache.close();
  }
});

Deno.test("every served kind's sets come from the watches while all of them are open, else none", async () => {
  const server = fakeServer();
  server.listed.daemonsets = [daemonSet("agent", "5"), daemonSet("other", "6")];
  server.listed.advanceddaemonsets = [{ metadata: { name: "ads", namespace: "edge" } }];
  const cache = new SnapshotCache({ api: server.api, watch: server.watch, logger: memoryLogger() });
  try {
    assertEquals(cache.sets(), undefined, "no kind learned from discovery yet");
    cache.setKindsServed(["advanceddaemonsets", "daemonsets"]);
    const sets = await opened(() => cache.sets());
    assertEquals(
      sets.map(({ kind, object }) => `${kind}/${object.metadata.name}`),
      ["advanceddaemonsets/ads", "daemonsets/agent", "daemonsets/other"],
    );
    const watch = server.watches.find((w) => w.path === "/apis/apps/v1/daemonsets")!;
    watch.onLine("DELETED", {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      ...daemonSet("other", "7"),
    });
    assertEquals(cache.sets()?.map(({ object }) => object.metadata.name), ["ads", "agent"]);
    watch.done(new Error("connection reset"));
    assertEquals(cache.sets(), undefined, "one kind's watch down: the fan-out lists");
  } finally {
    await cache.close();
  }
});
