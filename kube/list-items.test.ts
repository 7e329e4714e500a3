import { assertEquals, assertThrows } from "@std/assert";
import { ListItemsReader } from "./list-items.ts";

const list = {
  kind: "PodList",
  apiVersion: "v1",
  metadata: { resourceVersion: "42" },
  items: [
    { metadata: { name: "a", annotations: { "x/items": '[{"}]\\"' } } },
    { metadata: { name: "b", labels: { items: "[]" } }, spec: { containers: [{ name: "c" }] } },
    { metadata: { name: "ü-ç" } },
  ],
};

/** Reads `text` cut into pieces of `size` bytes (1 cuts every token, escape and UTF-8 byte). */
function read(text: string, size: number) {
  const items: unknown[] = [];
  const reader = new ListItemsReader((item) => items.push(item));
  const bytes = new TextEncoder().encode(text);
  for (let at = 0; at < bytes.length; at += size) reader.push(bytes.slice(at, at + size));
  const { rest } = reader.end();
  return { items, rest };
}

Deno.test("a list's items are handed on one by one, whatever its chunks, and the rest kept", () => {
  for (const text of [JSON.stringify(list), JSON.stringify(list, null, 2)]) {
    for (const size of [1, 2, 3, 7, 64, text.length]) {
      const { items, rest } = read(text, size);
      assertEquals(items, list.items, `chunks of ${size}`);
      assertEquals(rest, { ...list, items: [] });
    }
  }
});

Deno.test("keys named items below the top level are not the list's items", () => {
  const text = JSON.stringify({ metadata: { items: [1] }, items: [{ items: [{ a: 1 }] }] });
  const { items, rest } = read(text, 5);
  assertEquals(items, [{ items: [{ a: 1 }] }]);
  assertEquals(rest, { metadata: { items: [1] }, items: [] });
});

Deno.test("an empty or null items, and a list cut short or not of objects, are said", () => {
  assertEquals(read('{"items":[],"kind":"NodeList"}', 4).items, []);
  assertEquals(read('{"items":null}', 4).rest, { items: null });
  assertThrows(() => read('{"items":[{"a":1},{"b"', 3), Error, "ended inside its JSON (1 items");
  assertThrows(() => read('{"items":[{"a":1}, 2]}', 3), Error, "item 1 of the list is not");
  assertThrows(() => read('{"items":["x"]}', 3), Error, "item 0 of the list is not");
  assertThrows(() => read("[]", 1), Error, "not a JSON object");
});
