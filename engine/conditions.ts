/**
 * The set's conditions: every decision that waits says why. All five types are always present
 * (False when they do not hold), so a reader never guesses what a missing one means;
 * `lastTransitionTime` moves only when the status flips, and an Event is emitted when a condition
 * becomes True, so an unchanged cluster yields unchanged conditions and no events.
 */
import type { SetCondition } from "../api/kube-objects.ts";
import { formatTime } from "./pod-node-state.ts";
import type { EpochMillis, PlanEvent } from "../api/plan.ts";

export const conditionTypes = [
  "Progressing",
  "Complete",
  "Paused",
  "BudgetExhausted",
  "InvalidSpec",
] as const;
export type ConditionType = typeof conditionTypes[number];

export interface ConditionState {
  status: boolean;
  reason: string;
  message: string;
  /** An Event of this type whenever reason or message change, whatever the status. */
  event?: PlanEvent["type"];
}

const eventTypeWhenTrue: Record<ConditionType, PlanEvent["type"]> = {
  Progressing: "Normal",
  Complete: "Normal",
  Paused: "Normal",
  // A rollout with maxUnavailable 1 spends most of its time with the budget in use: not alarming.
  BudgetExhausted: "Normal",
  InvalidSpec: "Warning",
};

export function buildConditions(
  states: Record<ConditionType, ConditionState>,
  previous: SetCondition[] | undefined,
  now: EpochMillis,
): { conditions: SetCondition[]; events: PlanEvent[] } {
  const events: PlanEvent[] = [];
  const conditions = conditionTypes.map((type) =>
    buildCondition(type, states[type], previous, now, eventTypeWhenTrue[type], events)
  );
  return { conditions, events };
}

/**
 * One condition from its state: `lastTransitionTime` kept unless the status flips; an Event of
 * `whenTrue` when it becomes True, of `state.event` when its words change.
 */
export function buildCondition(
  type: string,
  state: ConditionState,
  previous: SetCondition[] | undefined,
  now: EpochMillis,
  whenTrue: PlanEvent["type"],
  events: PlanEvent[],
): SetCondition {
  const status = state.status ? "True" : "False";
  const before = previous?.find((c) => c.type === type);
  const flipped = before?.status !== status;
  if (state.status && flipped) {
    events.push({ type: whenTrue, reason: state.reason, message: state.message });
  } else if (
    state.event &&
    (flipped || before?.reason !== state.reason || before?.message !== state.message)
  ) {
    events.push({ type: state.event, reason: state.reason, message: state.message });
  }
  return {
    type,
    status,
    reason: state.reason,
    message: state.message,
    lastTransitionTime: flipped || !before?.lastTransitionTime
      ? formatTime(now)
      : before.lastTransitionTime,
  };
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}
