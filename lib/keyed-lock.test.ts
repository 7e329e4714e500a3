import { assertEquals, assertRejects } from "@std/assert";
import { KeyedLock } from "./keyed-lock.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

Deno.test("runs of one key never overlap and keep their order; other keys run beside them", async () => {
  const lock = new KeyedLock();
  const log: string[] = [];
  let inside = 0;
  let mostInside = 0;
  const work = (name: string) => async () => {
    inside++;
    mostInside = Math.max(mostInside, inside);
    log.push(`${name} in`);
    await tick();
    log.push(`${name} out`);
    inside--;
    return name;
  };
  const other = lock.run("b", async () => {
    log.push("b in");
    await tick();
    return "b";
  });
  const answers = await Promise.all([
    lock.run("a", work("1")),
    lock.run("a", work("2")),
    lock.run("a", work("3")),
    other,
  ]);
  assertEquals(answers, ["1", "2", "3", "b"]);
  assertEquals(mostInside, 1);
  assertEquals(log.filter((l) => l.endsWith(" in") && l !== "b in"), ["1 in", "2 in", "3 in"]);
  // b started while 1 held a.
  assertEquals(log.indexOf("b in") < log.indexOf("1 out"), true);
  assertEquals(lock.size, 0);
});

Deno.test("a run that fails passes the key on and forgets it when none waits", async () => {
  const lock = new KeyedLock();
  const failed = lock.run("a", async () => {
    await tick();
    throw new Error("refused");
  });
  const next = lock.run("a", () => Promise.resolve("next"));
  await assertRejects(() => failed, Error, "refused");
  assertEquals(await next, "next");
  assertEquals(lock.size, 0);
});
