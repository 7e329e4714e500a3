import { assertEquals, assertThrows } from "@std/assert";
import { createTimeline } from "./timeline.ts";
import { seededRandom } from "../random.ts";
import { eventually } from "../../lib/eventually.ts";

Deno.test("timeline: actions run in due order; cancelled ones never run", async () => {
  // 100 ms apart: far more than the clock's millisecond steps between the calls below.
  const timeline = createTimeline({ speed: 10 });
  try {
    const ran: string[] = [];
    timeline.after(3, () => ran.push("c"));
    timeline.after(1, () => ran.push("a"));
    const cancel = timeline.after(2, () => ran.push("never"));
    timeline.after(2, () => ran.push("b"));
    cancel();
    await eventually("three actions", () => ran.length === 3);
    assertEquals(ran, ["a", "b", "c"]);
  } finally {
    timeline.stop();
  }
});

Deno.test("timeline: a speed change rescales what is already scheduled", async () => {
  const timeline = createTimeline({ speed: 1 });
  try {
    let fired = false;
    // An hour of simulated time at speed 1; at speed 1e6 it is 3.6 ms.
    timeline.after(3600, () => fired = true);
    timeline.setSpeed(1_000_000);
    await eventually("rescaled action", () => fired, { timeoutMs: 2_000 });
    assertEquals(timeline.speed, 1_000_000);
    assertThrows(() => timeline.setSpeed(-1), RangeError);
  } finally {
    timeline.stop();
  }
});

Deno.test("timeline: the seeded generator repeats itself", () => {
  const a = seededRandom(7);
  const b = seededRandom(7);
  const first = [a(), a(), a()];
  assertEquals([b(), b(), b()], first);
  assertEquals(first.every((x) => x >= 0 && x < 1), true);
});
