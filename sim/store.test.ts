import { assertEquals, assertThrows } from "@std/assert";
import { type KubeObject, Store, StoreError, type StoreEvent } from "./store.ts";
import { labelSelectorMatcher, parseFieldSelector, parseLabelSelector } from "./selectors.ts";

function pod(name: string, nodeName?: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: "web" } },
    spec: { nodeName, containers: [{ name: "c", image: "nginx:1" }] },
  };
}

Deno.test("store: create assigns uid, version and generation; duplicates are AlreadyExists", () => {
  const store = new Store({ clock: () => 0 });
  const created = store.create("pods", pod("a"));
  assertEquals(created.metadata.generation, 1);
  assertEquals(created.metadata.resourceVersion, "1");
  assertEquals(typeof created.metadata.uid, "string");
  const err = assertThrows(() => store.create("pods", pod("a")), StoreError);
  assertEquals([err.code, err.reason], [409, "AlreadyExists"]);
});

Deno.test("store: stale resourceVersion is a Conflict; spec change moves generation", () => {
  const store = new Store();
  const created = store.create("pods", pod("a"));
  const changed = structuredClone(created);
  (changed.spec as { containers: { image: string }[] }).containers[0].image = "nginx:2";
  const updated = store.update("pods", changed);
  assertEquals(updated.metadata.generation, 2);
  const labelOnly = structuredClone(updated);
  labelOnly.metadata.labels = { app: "web", x: "y" };
  assertEquals(store.update("pods", labelOnly).metadata.generation, 2);
  const err = assertThrows(() => store.update("pods", created), StoreError);
  assertEquals(err.reason, "Conflict");
});

Deno.test("store: a no-op update writes nothing", () => {
  const store = new Store();
  const created = store.create("pods", pod("a"));
  const writes = store.writes;
  assertEquals(
    store.update("pods", created).metadata.resourceVersion,
    created.metadata.resourceVersion,
  );
  assertEquals(store.writes, writes);
});

Deno.test("store: bound pods wait for the kubelet's grace-0 delete; uid precondition", () => {
  const store = new Store({ clock: () => 1_000_000 });
  const created = store.create("pods", pod("a", "edge-1"));
  assertThrows(
    () => store.delete("pods", "default", "a", { preconditions: { uid: "other" } }),
    StoreError,
  );
  const first = store.delete("pods", "default", "a", {
    preconditions: { uid: created.metadata.uid },
  });
  assertEquals(first.removed, false);
  assertEquals(typeof first.object.metadata.deletionTimestamp, "string");
  assertEquals(store.delete("pods", "default", "a", { gracePeriodSeconds: 0 }).removed, true);
  assertEquals(store.tryGet("pods", "default", "a"), undefined);
});

Deno.test("store: finalizers hold a delete until removed", () => {
  const store = new Store();
  const object = pod("a");
  object.metadata.finalizers = ["example.com/hold"];
  store.create("pods", object);
  assertEquals(store.delete("pods", "default", "a").removed, false);
  const held = store.get("pods", "default", "a");
  held.metadata.finalizers = [];
  store.update("pods", held);
  assertEquals(store.tryGet("pods", "default", "a"), undefined);
});

Deno.test("store: watch replays after a version and 410s when compacted", () => {
  const store = new Store();
  store.create("pods", pod("a"));
  const from = store.resourceVersion;
  store.create("pods", pod("b"));
  store.create("nodes", { metadata: { name: "edge-1" } });
  const seen: StoreEvent[] = [];
  const stop = store.watch("pods", { resourceVersion: from }, (e) => seen.push(e));
  store.delete("pods", "default", "a");
  stop();
  assertEquals(seen.map((e) => [e.type, e.object.metadata.name]), [["ADDED", "b"], [
    "DELETED",
    "a",
  ]]);
  store.compact();
  const err = assertThrows(
    () => store.watch("pods", { resourceVersion: from }, () => {}),
    StoreError,
  );
  assertEquals(err.code, 410);
});

Deno.test("selectors: query syntax, LabelSelector objects and fields", () => {
  const match = parseLabelSelector("app=web,tier notin (db),!legacy,env in (a, b)");
  assertEquals(match({ app: "web", env: "a" }), true);
  assertEquals(match({ app: "web", env: "c" }), false);
  assertEquals(match({ app: "web", env: "a", legacy: "1" }), false);
  assertEquals(match({ app: "web", env: "b", tier: "db" }), false);
  assertThrows(() => parseLabelSelector("app=(x"), StoreError);
  const object = labelSelectorMatcher({
    matchLabels: { app: "web" },
    matchExpressions: [{ key: "zone", operator: "Exists" }],
  });
  assertEquals(object({ app: "web", zone: "z1" }), true);
  assertEquals(object({ app: "web" }), false);
  const fields = parseFieldSelector("spec.nodeName=edge-1,metadata.name!=b");
  assertEquals(fields({ spec: { nodeName: "edge-1" }, metadata: { name: "a" } }), true);
  assertEquals(fields({ spec: { nodeName: "edge-1" }, metadata: { name: "b" } }), false);
  // As kube-apiserver's field sets: an unset boolean is "false".
  const schedulable = parseFieldSelector("spec.unschedulable=false");
  assertEquals([schedulable({ spec: {} }), schedulable({ spec: { unschedulable: true } })], [
    true,
    false,
  ]);
});

Deno.test("store: history is kept per resource, in a ring of fixed size", () => {
  const store = new Store({ historyLimit: 3 });
  store.create("pods", pod("a"));
  const afterA = store.resourceVersion;
  for (let i = 0; i < 10; i++) store.create("leases", { metadata: { name: `l${i}` } });
  // Ten lease writes did not push the pod's event out.
  const seen: string[] = [];
  store.watch("pods", { resourceVersion: 0 }, (e) => seen.push(e.object.metadata.name))();
  assertEquals(seen, ["a"]);
  // Only the last three lease events are kept: resuming before them is 410 Gone.
  assertThrows(() => store.watch("leases", { resourceVersion: afterA }, () => {}), StoreError);
  const replayed: string[] = [];
  store.watch(
    "leases",
    { resourceVersion: store.oldestResumableVersion("leases") },
    (e) => replayed.push(e.object.metadata.name),
  )();
  assertEquals(replayed, ["l7", "l8", "l9"]);
});
