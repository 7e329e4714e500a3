import { assertEquals } from "@std/assert";
import type { PlanEvent } from "../api/plan.ts";
import { EventWindows, foldedMessageLimit, foldSetEvents } from "./event-fold.ts";
import { ManualTimers } from "../tests/doubles/manual-timers.ts";
import type { KubeObject } from "../kube/wire-objects.ts";

const created = (i: number): PlanEvent => ({
  type: "Normal",
  reason: "SuccessfulCreate",
  message: `Created pod agent-${i} on node edge-${i}: missing`,
  pod: `agent-${i}`,
  onSet: true,
});

Deno.test("a reconcile's pod events on the set fold into one per reason, every pod named", () => {
  const condition: PlanEvent = { type: "Warning", reason: "NodesUnreachable", message: "2 nodes" };
  const deleted: PlanEvent = {
    type: "Normal",
    reason: "SuccessfulDelete",
    message: "Deleted pod old-1: outdated",
    pod: "old-1",
    onSet: true,
  };
  const onPod: PlanEvent = { type: "Normal", reason: "Marked", message: "m", pod: "agent-9" };
  const events = foldSetEvents([created(1), condition, created(2), deleted, onPod, created(3)]);
  assertEquals(events, [
    condition,
    onPod,
    {
      type: "Normal",
      reason: "SuccessfulCreate",
      message: "3 pods: Created pod agent-1 on node edge-1: missing; " +
        "Created pod agent-2 on node edge-2: missing; Created pod agent-3 on node edge-3: missing",
      onSet: true,
    },
    deleted,
  ]);
});

Deno.test("a folded message stays within its limit and says how many pods it leaves out", () => {
  const [event] = foldSetEvents(Array.from({ length: 100 }, (_, i) => created(i)));
  assertEquals(event.message.length <= foldedMessageLimit, true, event.message);
  const named = event.message.match(/Created pod/g)!.length;
  assertEquals(event.message.startsWith("100 pods: "), true);
  assertEquals(event.message.endsWith(`; … and ${100 - named} more`), true, event.message);
});

Deno.test("Event windows: the first of a reason at once, the rest of its window folded as it closes", async () => {
  const timers = new ManualTimers();
  const written: string[] = [];
  const windows = new EventWindows({
    windowMs: 5_000,
    timers,
    write: (involved, event) => {
      written.push(
        `${timers.now() - start} ${involved.metadata.name} ${event.reason}: ${event.message}`,
      );
      return Promise.resolve();
    },
  });
  const start = timers.now();
  const set = (rv: string): KubeObject => ({ metadata: { name: "agent", resourceVersion: rv } });
  const createdPod = (pod: string): PlanEvent => ({
    type: "Normal",
    reason: "SuccessfulCreate",
    message: `Created pod ${pod}`,
    pod,
    onSet: true,
  });
  const deleted: PlanEvent = {
    ...createdPod("x"),
    reason: "SuccessfulDelete",
    message: "Deleted x",
  };
  await windows.record("ads/edge/agent", set("1"), [createdPod("a"), createdPod("b"), deleted]);
  await timers.advance(1_000);
  await windows.record("ads/edge/agent", set("2"), [createdPod("c")]);
  await windows.record("ads/edge/other", set("2"), [createdPod("z")]);
  await timers.advance(1_000);
  await windows.record("ads/edge/agent", set("3"), [createdPod("d")]);
  assertEquals(written, [
    "0 agent SuccessfulCreate: 2 pods: Created pod a; Created pod b",
    "0 agent SuccessfulDelete: Deleted x",
    "1000 agent SuccessfulCreate: Created pod z",
  ]);
  await timers.advance(3_000);
  // The window of agent's creates closed with two held; the deletes' and other's held none.
  assertEquals(written.slice(3), [
    "5000 agent SuccessfulCreate: 2 pods: Created pod c; Created pod d",
  ]);
  // A window that wrote opened the next: what comes within it is held again, then flushed.
  await timers.advance(1_000);
  await windows.record("ads/edge/agent", set("4"), [createdPod("e")]);
  assertEquals(written.length, 4);
  await windows.flush();
  assertEquals(written.slice(4), ["6000 agent SuccessfulCreate: Created pod e"]);
  await timers.advance(20_000);
  assertEquals(written.length, 5, "nothing held, nothing written");
  assertEquals(timers.pending, 0);
});
