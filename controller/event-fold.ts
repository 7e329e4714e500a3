/**
 * The Events one reconcile writes: what it did to pods, told on the set, folded into one Event
 * per type and reason (`SuccessfulDelete: 100 pods: …`), each pod named. A rollout of a thousand
 * nodes then writes a few Events per wave, not two per node: upstream writes one per pod and its
 * recorder's spam filter drops all but 25 per object in five minutes, so a large rollout's
 * Events say little there; here every pod is named in fewer writes (ADR 0032).
 */
import type { PlanEvent } from "../api/plan.ts";

/** Most characters of a folded message (events.k8s.io holds a note of at most 1 kB). */
export const foldedMessageLimit = 1024;

export function foldSetEvents(events: readonly PlanEvent[]): PlanEvent[] {
  const kept: PlanEvent[] = [];
  const groups = new Map<string, PlanEvent[]>();
  for (const event of events) {
    if (!event.onSet) {
      kept.push(event);
      continue;
    }
    const key = `${event.type}/${event.reason}`;
    const group = groups.get(key);
    if (group) group.push(event);
    else groups.set(key, [event]);
  }
  for (const group of groups.values()) kept.push(group.length === 1 ? group[0] : folded(group));
  return kept;
}

/** One Event for a group: its count, then each message while they fit, then how many did not. */
function folded(group: PlanEvent[]): PlanEvent {
  const { type, reason } = group[0];
  let message = `${group.length} pods: ${group[0].message}`;
  for (const [i, event] of group.entries()) {
    if (i === 0) continue;
    const rest = `; … and ${group.length - i} more`;
    const next = `${message}; ${event.message}`;
    const room = i === group.length - 1 ? foldedMessageLimit : foldedMessageLimit - rest.length;
    if (next.length > room) {
      message += rest;
      break;
    }
    message = next;
  }
  return { type, reason, message, onSet: true };
}
