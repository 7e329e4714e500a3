import { assertEquals, assertThrows } from "@std/assert";
import { fieldPaths, serverSideApply } from "./apply.ts";
import { ApiError } from "./status.ts";
import type { KubeObject } from "./store.ts";

const options = (manager: string, force = false) => ({
  manager,
  force,
  time: "2026-01-01T00:00:00Z",
});

function pod(
  containers: Record<string, string>[],
  labels: Record<string, string> = {},
): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "p", labels }, spec: { containers } };
}

Deno.test("ssa: field paths key list items by merge key", () => {
  assertEquals(fieldPaths(pod([{ name: "c", image: "i" }]) as never).map((p) => p.join(" ")), [
    'f:spec f:containers k:{"name":"c"} .',
    'f:spec f:containers k:{"name":"c"} f:name',
    'f:spec f:containers k:{"name":"c"} f:image',
  ]);
});

Deno.test("ssa: a manager's dropped fields go, other managers' stay, differing values conflict", () => {
  const first = serverSideApply(
    undefined,
    pod([{ name: "c", image: "i:1" }, { name: "d", image: "j" }], { a: "1" }),
    options("alice"),
  );
  const shared = serverSideApply(first, pod([], { b: "2" }), options("bob"));
  const dropped = serverSideApply(shared, pod([{ name: "c", image: "i:1" }]), options("alice"));
  assertEquals((dropped.spec as { containers: unknown[] }).containers, [{
    name: "c",
    image: "i:1",
  }]);
  assertEquals(dropped.metadata.labels, { b: "2" });
  const unlabelled = serverSideApply(first, pod([{ name: "c", image: "i:1" }]), options("alice"));
  assertEquals("labels" in unlabelled.metadata, false, "a map emptied by the apply goes");
  const err = assertThrows(
    () => serverSideApply(dropped, pod([{ name: "c", image: "i:2" }]), options("bob")),
    ApiError,
  );
  assertEquals([err.code, err.causes[0].field], [409, '.spec.containers[name="c"].image']);
  const forced = serverSideApply(dropped, pod([{ name: "c", image: "i:2" }]), options("bob", true));
  assertEquals((forced.spec as { containers: { image: string }[] }).containers[0].image, "i:2");
});
