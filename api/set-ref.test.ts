import { assertEquals, assertThrows } from "@std/assert";
import { parseSetKey, setKey } from "./set-ref.ts";

Deno.test("a set key reads back as the set it was written from; anything else is refused", () => {
  const ref = { kind: "daemonsets" as const, namespace: "edge", name: "agent" };
  assertEquals(parseSetKey(setKey(ref)), ref);
  for (const key of ["*", "edge/*", "pods/edge/agent", "daemonsets/edge", "daemonsets/a/b/c"]) {
    assertThrows(() => parseSetKey(key), Error, "not a set key");
  }
});
