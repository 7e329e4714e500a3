import { assertEquals, assertRejects } from "@std/assert";
import { forEachConcurrently } from "./concurrently.ts";

Deno.test("forEachConcurrently runs every item, never more than the limit at once", async () => {
  let running = 0;
  let most = 0;
  const done: number[] = [];
  await forEachConcurrently([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
    running++;
    most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, n % 3));
    done.push(n);
    running--;
  });
  assertEquals(most, 3);
  assertEquals(done.toSorted(), [1, 2, 3, 4, 5, 6, 7]);
});

Deno.test("forEachConcurrently tries every item before it throws the first failure", async () => {
  const tried: number[] = [];
  await assertRejects(
    () =>
      forEachConcurrently([1, 2, 3, 4], 2, (n) => {
        tried.push(n);
        return n === 2 ? Promise.reject(new Error("item 2")) : Promise.resolve();
      }),
    Error,
    "item 2",
  );
  assertEquals(tried.toSorted(), [1, 2, 3, 4]);
});
