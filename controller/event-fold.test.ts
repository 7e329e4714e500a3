import { assertEquals } from "@std/assert";
import type { PlanEvent } from "../api/plan.ts";
import { foldedMessageLimit, foldSetEvents } from "./event-fold.ts";

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
