import { assertEquals, assertThrows } from "@std/assert";
import { createTimeline } from "./timeline.ts";
import { seededRandom } from "../random.ts";
import { ManualTimers } from "../../tests/doubles/manual-timers.ts";

Deno.test("timeline: actions run in due order, each when due; cancelled ones never run", async () => {
  const timers = new ManualTimers();
  // Speed 10: one simulated second is 100 ms.
  const timeline = createTimeline({ speed: 10, timers });
  try {
    const ran: string[] = [];
    timeline.after(3, () => ran.push("c"));
    timeline.after(1, () => ran.push("a"));
    const cancel = timeline.after(2, () => ran.push("never"));
    timeline.after(2, () => ran.push("b"));
    timeline.after(2, () => timeline.after(0.5, () => ran.push("scheduled by b's peer")));
    cancel();
    await timers.advance(99);
    assertEquals(ran, []);
    await timers.advance(1);
    assertEquals(ran, ["a"]);
    await timers.advance(150);
    assertEquals(ran, ["a", "b", "scheduled by b's peer"]);
    await timers.advance(50);
    assertEquals(ran, ["a", "b", "scheduled by b's peer", "c"]);
    assertEquals(timers.pending, 0, "nothing left armed");
  } finally {
    timeline.stop();
  }
});

Deno.test("timeline: a speed change rescales what is already scheduled", async () => {
  const timers = new ManualTimers();
  const timeline = createTimeline({ speed: 1, timers });
  try {
    let fired = false;
    timeline.after(3600, () => fired = true);
    await timers.advance(1800_000);
    assertEquals(fired, false);
    // Half an hour of simulated time is left; at speed 1000 it takes 1.8 s of real time.
    timeline.setSpeed(1000);
    await timers.advance(1799);
    assertEquals(fired, false);
    await timers.advance(1);
    assertEquals(fired, true);
    assertEquals(timeline.speed, 1000);
    assertThrows(() => timeline.setSpeed(-1), RangeError);
  } finally {
    timeline.stop();
  }
});

Deno.test("timeline: stop drops what is scheduled", async () => {
  const timers = new ManualTimers();
  const timeline = createTimeline({ speed: 1, timers });
  let fired = false;
  timeline.after(1, () => fired = true);
  timeline.stop();
  await timers.advance(10_000);
  assertEquals([fired, timers.pending], [false, 0]);
});

Deno.test("timeline: the seeded generator repeats itself", () => {
  const a = seededRandom(7);
  const b = seededRandom(7);
  const first = [a(), a(), a()];
  assertEquals([b(), b(), b()], first);
  assertEquals(first.every((x) => x >= 0 && x < 1), true);
});
