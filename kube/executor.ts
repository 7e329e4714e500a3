/**
 * The one executor of a plan's actions, as upstream's `syncNodes`: at most `burst` pod
 * creations and deletions per call, sent in slow-start batches (1, 2, 4, …) so that a failing API server costs one
 * request, not a whole burst. A batch with a failure ends the run; the rest is left for the
 * next reconcile, which re-plans from what it observes.
 */
import type { Action } from "../engine/types.ts";
import type { KubeClient } from "./client.ts";
import { type KubeError, toKubeError } from "./errors.ts";

/** `alreadyDone`: a create found the object, a delete found it gone (or replaced). */
export type ActionResult = "done" | "alreadyDone" | "failed" | "skipped";

export interface ActionOutcome {
  action: Action;
  result: ActionResult;
  error?: KubeError;
}

export interface ExecuteOptions {
  /** Most pod creations and deletions sent in one call (the set's `burstReplicas`). */
  burst: number;
  /** First batch size; doubled after each batch that fully succeeded. */
  initialBatch?: number;
  now: Date;
}

/** Upstream's default `burstReplicas`. */
export const defaultBurst = 250;

export async function executeActions(
  client: KubeClient,
  namespace: string,
  actions: readonly Action[],
  { burst, initialBatch = 1, now }: ExecuteOptions,
): Promise<ActionOutcome[]> {
  const outcomes: ActionOutcome[] = actions.map((action) => ({ action, result: "skipped" }));
  // As upstream's burstReplicas, the cap counts pod creations and deletions; revisions,
  // patches and conditions ride along.
  let podWrites = 0;
  const sendable = outcomes.filter(({ action }) => {
    if (action.type !== "createPod" && action.type !== "deletePod") return true;
    return ++podWrites <= Math.max(0, burst);
  });
  let start = 0;
  for (let size = Math.max(1, initialBatch); start < sendable.length; size *= 2) {
    const end = Math.min(sendable.length, start + size);
    const batch = sendable.slice(start, end);
    await Promise.all(batch.map(async (outcome) => {
      try {
        outcome.result = await applyAction(client, namespace, outcome.action, now);
      } catch (err) {
        outcome.result = "failed";
        outcome.error = toKubeError(err, outcome.action.type);
      }
    }));
    start = end;
    if (batch.some((o) => o.result === "failed")) break;
  }
  return outcomes;
}

async function applyAction(
  client: KubeClient,
  namespace: string,
  action: Action,
  now: Date,
): Promise<"done" | "alreadyDone"> {
  const done = (outcome: string) =>
    outcome === "created" || outcome === "deleted" ? "done" : "alreadyDone";
  switch (action.type) {
    case "createPod":
      return done(await client.createPod(namespace, action.pod));
    case "deletePod":
      return done(await client.deletePod(namespace, action.name, action.uid));
    case "patchPod":
      await client.patchPod(namespace, action.name, withUid(action.patch, action.uid));
      return "done";
    case "setPodCondition":
      await client.setPodCondition(namespace, action.name, action.condition, now);
      return "done";
    case "createRevision":
      return done(await client.createRevision(namespace, action.revisionObject));
    case "patchRevision":
      await client.patchRevision(namespace, action.name, withUid(action.patch, action.uid));
      return "done";
    case "deleteRevision":
      return done(await client.deleteRevision(namespace, action.name, action.uid));
  }
}

/** A UID in a patch's metadata is a precondition: the API server refuses it for another object. */
function withUid(patch: { metadata?: Record<string, unknown> }, uid: string) {
  return { ...patch, metadata: { ...patch.metadata, uid } };
}
