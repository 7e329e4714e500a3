/**
 * `edgeroll history|undo|pause|resume|approve|promote|abort` (and the same as
 * `kubectl edgeroll …`): a rollout operated from the command line, as `kubectl rollout` operates a
 * Deployment's, for AdvancedDaemonSets, Kruise's DaemonSets and OpenYurt's annotated DaemonSets
 * (ADR 0035). Revisions are the set's ControllerRevisions; pause is `rollingUpdate.paused` (an
 * annotation on a plain DaemonSet, which has no such field); resume also lifts a stop by the
 * failure budget; approve, promote and abort answer a rollout plan by annotations that name its
 * revision (ADR 0050).
 */
import { type Command, intOption, stringOption, UsageError } from "../lib/command.ts";
import { pausedAnnotation, resumeRevisionAnnotation } from "../api/advanced-daemonset.ts";
import {
  abortedAnnotation,
  approvedStepAnnotation,
  planFieldPath,
  promotedAnnotation,
  rolloutPlanAnnotation,
  type RolloutPlanStatus,
} from "../api/rollout-plan.ts";
import type { ControllerRevision, PodTemplateSpec } from "../api/kube-objects.ts";
import { setKey, type SetRef } from "../api/set-ref.ts";
import { clientNodeApi } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { labelSelectorString } from "../kube/selector.ts";
import { type UserCalls, userCalls } from "../kube/user-calls.ts";
import { parseSetArg } from "./status-command.ts";

/** One revision of a set as `history` lists it. */
export interface RevisionLine {
  revision: number;
  hash: string;
  images: string[];
  template: PodTemplateSpec;
}

/** The template a revision holds, without the `$patch` directive the native controller writes. */
function templateOf(revision: ControllerRevision): PodTemplateSpec | undefined {
  const data = revision.data as { spec?: { template?: PodTemplateSpec & { $patch?: string } } };
  const template = data?.spec?.template;
  if (!template) return undefined;
  const { $patch: _, ...rest } = template;
  return rest as PodTemplateSpec;
}

/** The set's own revisions, oldest first. */
export function revisionLines(set: KubeObject, revisions: ControllerRevision[]): RevisionLine[] {
  return revisions
    .filter((r) =>
      r.metadata.ownerReferences?.some((o) => o.controller && o.uid === set.metadata.uid)
    )
    .flatMap((r) => {
      const template = templateOf(r);
      if (!template) return [];
      return [{
        revision: r.revision,
        hash: r.metadata.labels?.["controller-revision-hash"] ?? r.metadata.name ?? "",
        images: template.spec.containers.map((c) => `${c.name}=${c.image}`),
        template,
      }];
    })
    .sort((a, b) => a.revision - b.revision);
}

/** `REVISION  HASH  IMAGES  CHANGE`, the current one marked. */
export function renderHistory(ref: SetRef, lines: RevisionLine[], current?: string): string {
  const rows = lines.map((line, i) => {
    const before = i > 0 ? new Set(lines[i - 1].images) : new Set<string>();
    const changed = line.images.filter((image) => !before.has(image));
    return [
      `${line.revision}${line.hash === current ? "*" : ""}`,
      line.hash,
      line.images.join(","),
      i === 0 ? "first" : changed.length > 0 ? changed.join(",") : "pod spec",
    ];
  });
  const header = ["REVISION", "HASH", "IMAGES", "CHANGED"];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const format = (r: string[]) => r.map((cell, c) => cell.padEnd(widths[c])).join("  ").trimEnd();
  return [`${setKey(ref)} (* current)`, format(header), ...rows.map(format)].join("\n");
}

/** What every command of this file (and the dashboard's actions) reads and writes with. */
export class SetAccess {
  readonly kube: KubeClient;
  readonly #user: UserCalls;

  constructor(readonly ref: SetRef, kubeconfig: string | undefined) {
    const kc = loadKubeConfig(kubeconfig);
    this.kube = new KubeClient(clientNodeApi(kc));
    this.#user = userCalls(kc);
  }

  async set(): Promise<KubeObject> {
    const set = await this.kube.readSet(this.ref);
    if (!set) throw new UsageError(`${setKey(this.ref)} not found`);
    return set;
  }

  async history(set: KubeObject): Promise<RevisionLine[]> {
    const spec = set.spec as { selector: Parameters<typeof labelSelectorString>[0] };
    const { items } = await this.kube.api.listRevisions({
      namespace: this.ref.namespace,
      labelSelector: labelSelectorString(spec.selector),
    });
    return revisionLines(set, items as ControllerRevision[]);
  }

  /** A JSON merge patch of the set itself. */
  async patch(patch: Record<string, unknown>): Promise<void> {
    await this.kube.api.patchSet({ ...this.ref, patch });
  }

  /** Replaces the set's template whole, under the resourceVersion it was read at. */
  async replaceTemplate(set: KubeObject, template: PodTemplateSpec): Promise<void> {
    const object = { ...set, spec: { ...(set.spec as object), template } };
    await this.#user.replaceSet({ kind: this.ref.kind, object });
  }
}

const setOptions = { kubeconfig: { type: "string" as const } };
const setHelp = { kubeconfig: kubeconfigHelp };
const setUsage = "[KIND/]NAMESPACE/NAME [--kubeconfig PATH]";
const access = (args: { positionals: string[]; values: Record<string, unknown> }) =>
  new SetAccess(
    parseSetArg(args.positionals[0], "advanceddaemonsets"),
    stringOption(args as never, "kubeconfig"),
  );

/** The current revision's hash, as the controller last wrote it. */
async function currentHash(sets: SetAccess, set: KubeObject): Promise<string | undefined> {
  const status = await sets.kube.writtenStatusOf(sets.ref, set);
  return (status as { daemonSetHash?: string } | undefined)?.daemonSetHash;
}

/**
 * Puts the template of revision `wanted` back (0: the revision before the current one); what
 * was done, in a sentence.
 */
export async function undo(sets: SetAccess, wanted: number): Promise<string> {
  const set = await sets.set();
  const lines = await sets.history(set);
  const current = await currentHash(sets, set);
  const at = lines.findIndex((l) => l.hash === current);
  const target = wanted > 0
    ? lines.find((l) => l.revision === wanted)
    : lines[(at === -1 ? lines.length - 1 : at) - 1];
  if (!target) {
    throw new UsageError(
      wanted > 0
        ? `${setKey(sets.ref)} has no revision ${wanted} (it has ${
          lines.map((l) => l.revision).join(", ")
        })`
        : `${setKey(sets.ref)} has no revision before the current one`,
    );
  }
  await sets.replaceTemplate(set, target.template);
  return `${setKey(sets.ref)} rolled back to revision ${target.revision} (${target.hash})`;
}

/** Pauses updates: `paused`, or on a plain DaemonSet (which has no such field) an annotation. */
export async function pause(sets: SetAccess): Promise<string> {
  await sets.set();
  await sets.patch(
    sets.ref.kind === "daemonsets"
      ? { metadata: { annotations: { [pausedAnnotation]: "true" } } }
      : { spec: { updateStrategy: { rollingUpdate: { paused: true } } } },
  );
  return `${setKey(sets.ref)} paused`;
}

/**
 * Unpauses, lifts a plan's abort, and lifts a stop by the failure budget by acknowledging its
 * failures.
 */
export async function resume(sets: SetAccess): Promise<string> {
  const set = await sets.set();
  const status = await sets.kube.writtenStatusOf(sets.ref, set) as {
    rolloutStop?: { revision: string; reason: string };
  } | undefined;
  const stop = status?.rolloutStop;
  // Each value resumes once (ADR 0035): a later stop needs a later resume.
  // An abort of the plan is lifted too.
  const annotations = {
    [abortedAnnotation]: null,
    ...(sets.ref.kind === "daemonsets" ? { [pausedAnnotation]: null } : {}),
    ...(stop ? { [resumeRevisionAnnotation]: `${stop.revision}/${Date.now()}` } : {}),
  };
  await sets.patch({
    metadata: { annotations },
    ...(sets.ref.kind === "daemonsets"
      ? {}
      : { spec: { updateStrategy: { rollingUpdate: { paused: false } } } }),
  });
  return `${setKey(sets.ref)} resumed` +
    (stop ? `: the failures that stopped revision ${stop.revision} are acknowledged` : "");
}

/** The rollout plan the controller last wrote for the set's current revision, or a usage error. */
async function currentPlan(sets: SetAccess): Promise<RolloutPlanStatus> {
  const set = await sets.set();
  const status = await sets.kube.writtenStatusOf(sets.ref, set) as {
    daemonSetHash?: string;
    plan?: RolloutPlanStatus;
  } | undefined;
  const plan = status?.plan;
  if (!plan || plan.revision !== status?.daemonSetHash) {
    throw new UsageError(
      `${setKey(sets.ref)} has no rollout plan for its current revision` +
        (status?.daemonSetHash ? ` ${status.daemonSetHash}` : "") +
        (sets.ref.kind === "advanceddaemonsets"
          ? ` (${planFieldPath}, ADR 0050)`
          : ` (annotation ${rolloutPlanAnnotation}, ADR 0053)`),
    );
  }
  return plan;
}

/**
 * Approves the plan's current step: once it is done (and soaked) the next one starts. The value
 * names the revision, so an approval never passes another revision's step.
 */
export async function approve(sets: SetAccess): Promise<string> {
  const plan = await currentPlan(sets);
  if (plan.state === "Done" || plan.state === "Stopped") {
    throw new UsageError(`${setKey(sets.ref)}'s plan is ${plan.state}: nothing to approve`);
  }
  await sets.patch({
    metadata: { annotations: { [approvedStepAnnotation]: `${plan.revision}/${plan.step}` } },
  });
  return `${
    setKey(sets.ref)
  }: step ${plan.step} of ${plan.steps} of revision ${plan.revision} approved` +
    (plan.state === "AwaitingApproval" ? "" : ` (it is ${plan.state}: the approval waits for it)`);
}

/** Passes every remaining pause of the current revision's plan. */
export async function promote(sets: SetAccess): Promise<string> {
  const plan = await currentPlan(sets);
  await sets.patch({ metadata: { annotations: { [promotedAnnotation]: plan.revision } } });
  return `${setKey(sets.ref)}: revision ${plan.revision} promoted, no more pauses`;
}

/** Stops the current revision's rollout: no more old pods are replaced. */
export async function abort(sets: SetAccess): Promise<string> {
  const plan = await currentPlan(sets);
  await sets.patch({ metadata: { annotations: { [abortedAnnotation]: plan.revision } } });
  return `${
    setKey(sets.ref)
  }: the rollout of revision ${plan.revision} aborted at step ${plan.step} of ${plan.steps}`;
}

/** A command on one set that acts and prints what it did, in a sentence. */
function setCommand(
  name: string,
  summary: string,
  act: (sets: SetAccess) => Promise<string>,
): Command {
  return {
    name,
    summary,
    usage: setUsage,
    options: setOptions,
    help: setHelp,
    async run(args) {
      console.log(await act(access(args)));
      return 0;
    },
  };
}

export const approveCommand = setCommand(
  "approve",
  "Approve a rollout plan's current step: once it is done, the next step starts (ADR 0050).",
  approve,
);
export const promoteCommand = setCommand(
  "promote",
  "Promote a rollout plan: every remaining step, without pauses.",
  promote,
);
export const abortCommand = setCommand(
  "abort",
  "Abort a rollout plan: no more old pods are replaced for the current revision.",
  abort,
);

export const historyCommand: Command = {
  name: "history",
  summary: "List a set's revisions (its ControllerRevisions) and what changed in each.",
  usage: setUsage,
  options: setOptions,
  help: setHelp,
  async run(args) {
    const sets = access(args);
    const set = await sets.set();
    console.log(renderHistory(sets.ref, await sets.history(set), await currentHash(sets, set)));
    return 0;
  },
};

export const undoCommand: Command = {
  name: "undo",
  summary:
    "Roll a set back: its template becomes that of the revision before the current one, or of --to-revision N.",
  usage: `${setUsage} [--to-revision N]`,
  options: { ...setOptions, "to-revision": { type: "string" } },
  help: { ...setHelp, "to-revision": "the revision to return to (default: the one before)" },
  async run(args) {
    const wanted = intOption(args, "to-revision", 0, { min: 0, max: Number.MAX_SAFE_INTEGER });
    console.log(await undo(access(args), wanted));
    return 0;
  },
};

export const pauseCommand = setCommand(
  "pause",
  "Pause a set's rollout: no more old pods are replaced (pods are still created on new nodes).",
  pause,
);

export const resumeCommand = setCommand(
  "resume",
  "Resume a set's rollout: unpause it and, if its failure budget stopped it, acknowledge the failed pods and go on.",
  resume,
);
