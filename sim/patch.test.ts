import { assertEquals, assertThrows } from "@std/assert";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type Json } from "./patch.ts";
import { ApiError } from "./status.ts";

const spec: Json = {
  containers: [
    { name: "a", image: "a:1", env: [{ name: "X", value: "1" }, { name: "Y", value: "2" }] },
    { name: "b", image: "b:1" },
  ],
  finalizers: ["f1"],
  updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
};

Deno.test("json patch: add, replace, remove, move, copy, test; failures are Status errors", () => {
  const doc = { a: [1, 2], b: { c: 1 } };
  assertEquals(
    applyJsonPatch(doc, [
      { op: "add", path: "/a/-", value: 3 },
      { op: "replace", path: "/b/c", value: 2 },
      { op: "copy", from: "/b", path: "/d" },
      { op: "move", from: "/a/0", path: "/e" },
      { op: "remove", path: "/b" },
      { op: "test", path: "/d/c", value: 2 },
    ]),
    { a: [2, 3], d: { c: 2 }, e: 1 },
  );
  assertEquals(doc, { a: [1, 2], b: { c: 1 } }, "the original is untouched");
  assertEquals(
    assertThrows(() => applyJsonPatch(doc, [{ op: "test", path: "/a/0", value: 9 }]), ApiError)
      .code,
    422,
  );
  assertEquals(
    assertThrows(() => applyJsonPatch(doc, [{ op: "replace", path: "/zz", value: 1 }]), ApiError)
      .code,
    422,
  );
  assertEquals(assertThrows(() => applyJsonPatch(doc, { op: "add" }), ApiError).code, 400);
});

Deno.test("merge patch: maps merge, null deletes, lists replace", () => {
  assertEquals(
    applyMergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { b: null, d: 3 }, l: [3] }),
    { a: { c: 2, d: 3 }, l: [3] },
  );
});

Deno.test("strategic merge: lists merge by key, $patch delete, $setElementOrder, primitives", () => {
  const patched = applyStrategicMergePatch(spec, {
    "$setElementOrder/containers": [{ name: "b" }, { name: "a" }],
    containers: [{ name: "a", image: "a:2", env: [{ name: "X", $patch: "delete" }] }],
    finalizers: ["f2"],
    "$deleteFromPrimitiveList/finalizers": ["f1"],
  }) as { containers: { name: string; image: string; env?: unknown[] }[]; finalizers: string[] };
  assertEquals(patched.containers.map((c) => c.name), ["b", "a"]);
  assertEquals(patched.containers[1].image, "a:2");
  assertEquals(patched.containers[1].env, [{ name: "Y", value: "2" }]);
  assertEquals(patched.finalizers, ["f2"]);
});

Deno.test("strategic merge: $retainKeys drops keys not listed, $patch replace swaps a map", () => {
  const onDelete = applyStrategicMergePatch(spec, {
    updateStrategy: { $retainKeys: ["type"], type: "OnDelete" },
  }) as { updateStrategy: unknown };
  assertEquals(onDelete.updateStrategy, { type: "OnDelete" });
  const replaced = applyStrategicMergePatch({ m: { a: 1, b: 2 } }, {
    m: { $patch: "replace", c: 3 },
  });
  assertEquals(replaced, { m: { c: 3 } });
});

Deno.test("json patch: test compares objects as the API server does, their members in any order", () => {
  const doc = { metadata: { annotations: { a: "1", b: "2" } } };
  const patched = applyJsonPatch(doc, [
    { op: "test", path: "/metadata/annotations", value: { b: "2", a: "1" } },
    { op: "add", path: "/metadata/annotations/c", value: "3" },
  ]);
  assertEquals(patched, { metadata: { annotations: { a: "1", b: "2", c: "3" } } });
  for (const value of [{ a: "1" }, { a: "1", b: "2", c: "3" }, { a: "1", b: 2 }, ["1", "2"]]) {
    assertThrows(
      () => applyJsonPatch(doc, [{ op: "test", path: "/metadata/annotations", value }]),
      ApiError,
    );
  }
});
