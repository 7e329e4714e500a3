/**
 * The one executor of a plan's actions, as upstream's `syncNodes`: at most `burst` pod
 * creations and at most `burst` deletions (pod conditions and pull Jobs count with them) per
 * call. Revisions go first (the pods name theirs; a failure there ends the run). Creations go in
 * slow-start batches (1, 2, 4, …), so a failing API server or an exhausted quota costs one
 * request, not a whole burst: a batch with a failure skips the creations after it. Deletions,
 * patches and pod conditions then go all at once, as upstream deletes. Never more than a few
 * dozen requests are in flight: a batch of 256 creations sent at once opened as many
 * connections, each a TLS session held by this process and by the API server. What did not
 * land is left for the next reconcile, which re-plans from what it observes.
 */
import type { Action } from "../api/plan.ts";
import type { KubeClient } from "./client.ts";
import type { KubeObject } from "./wire-objects.ts";
import type { SetRef } from "../api/set-ref.ts";
import { type KubeError, toKubeError } from "./errors.ts";
import { forEachConcurrently } from "../lib/concurrently.ts";

/** `alreadyDone`: a create found the object, a delete found it gone (or replaced). */
export type ActionResult = "done" | "alreadyDone" | "failed" | "skipped";

export interface ActionOutcome {
  action: Action;
  result: ActionResult;
  error?: KubeError;
}

export interface ExecuteOptions {
  /** Most pod creations, and most deletions, sent in one call (the plan's `burst`). */
  burst: number;
  /** First batch of creations; doubled after each batch that fully succeeded. */
  initialBatch?: number;
  now: Date;
}

/** Requests in flight at once, within a batch of creations and for the other writes. */
const inFlight = 32;

const revisionActions = new Set<Action["type"]>([
  "createRevision",
  "patchRevision",
  "deleteRevision",
]);

export async function executeActions(
  client: KubeClient,
  ref: SetRef,
  actions: readonly Action[],
  { burst, initialBatch = 1, now }: ExecuteOptions,
): Promise<ActionOutcome[]> {
  const outcomes: ActionOutcome[] = actions.map((action) => ({ action, result: "skipped" }));
  // As upstream's burstReplicas, creations and deletions are capped each; the engine counts
  // pod conditions with deletions (engine/decisions.ts), so does this. Revisions and patches ride
  // along. A plan keeps within its burst: this cap only holds one that would not.
  const sent = { create: 0, delete: 0 };
  const sendable = outcomes.filter(({ action }) => {
    const share = action.type === "createPod"
      ? "create"
      : action.type === "deletePod" || action.type === "setPodCondition" ||
          action.type === "createJob" || action.type === "deleteJob"
      ? "delete"
      : undefined;
    return share === undefined || ++sent[share] <= Math.max(0, burst);
  });
  const apply = async (outcome: ActionOutcome) => {
    try {
      outcome.result = await applyAction(client, ref, outcome.action, now);
    } catch (err) {
      outcome.result = "failed";
      outcome.error = toKubeError(err, outcome.action.type);
    }
  };
  const failed = (batch: ActionOutcome[]) => batch.some((o) => o.result === "failed");

  const revisions = sendable.filter((o) => revisionActions.has(o.action.type));
  await Promise.all(revisions.map(apply));
  if (failed(revisions)) return outcomes;

  const creations = sendable.filter((o) => o.action.type === "createPod");
  let start = 0;
  for (let size = Math.max(1, initialBatch); start < creations.length; size *= 2) {
    const batch = creations.slice(start, start + size);
    await forEachConcurrently(batch, inFlight, apply);
    start += batch.length;
    if (failed(batch)) break;
  }

  const rest = sendable.filter((o) =>
    o.action.type !== "createPod" && !revisionActions.has(o.action.type)
  );
  await forEachConcurrently(rest, inFlight, apply);
  return outcomes;
}

async function applyAction(
  client: KubeClient,
  ref: SetRef,
  action: Action,
  now: Date,
): Promise<"done" | "alreadyDone"> {
  const { namespace } = ref;
  const done = (outcome: string) =>
    outcome === "created" || outcome === "deleted" ? "done" : "alreadyDone";
  switch (action.type) {
    case "createPod":
      return done(await client.createPod(namespace, action.pod));
    case "deletePod":
      return done(await client.deletePod(namespace, action.name, action.uid));
    case "patchPod":
      // The resize first: the patch names the revision the resized pod runs, so it must not
      // land without it (a failed resize leaves the pod as it was, for the next plan).
      if (action.resize) await client.resizePod(namespace, action.name, action.resize);
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
    case "createJob":
      return done(await client.createJob(namespace, action.job as KubeObject));
    case "deleteJob":
      return done(await client.deleteJob(namespace, action.name, action.uid));
    case "rollbackTemplate":
      await client.patchSet(ref, action.patch);
      return "done";
  }
}

/** A UID in a patch's metadata is a precondition: the API server refuses it for another object. */
function withUid(patch: { metadata?: Record<string, unknown> }, uid: string) {
  return { ...patch, metadata: { ...patch.metadata, uid } };
}
