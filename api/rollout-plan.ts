/**
 * A rollout plan (ADR 0050): `spec.updateStrategy.rollingUpdate.plan` of an AdvancedDaemonSet.
 * The desired nodes, grouped into domains by a node label, are put in one order; steps are
 * cumulative targets over it, each followed by an optional soak and approval. Here: the spec's
 * shape and the rules that need no nodes, the status it writes, and the annotations an operator
 * writes to approve, promote or abort.
 */
import { z } from "zod";
import { intOrPercentProblem, isZero } from "./int-or-percent.ts";
import { IntOrString } from "./kube-objects.ts";
import { type FieldIssue, labelKeyIssues, type Notice } from "./label-selector.ts";
import { annotationPath, readJsonAnnotation } from "./json-annotation.ts";

/** The most domains a plan orders: a fleet with more is InvalidSpec (the status lists each one). */
export const maxPlanDomains = 100;

/** The longest soak a step may ask: a week. */
export const maxSoakSeconds = 7 * 24 * 3600;

export const PlanStep = z.object({
  nodes: IntOrString.optional().describe(
    "The step's target: the first nodes of the plan's order, a count or a percent of the desired " +
      "nodes (rounded up), counted from the start of the order (cumulative).",
  ),
  domains: z.number().int().min(1).max(maxPlanDomains).optional().describe(
    "The step's target: up to the end of the N-th domain after the last one an earlier step " +
      "covered whole.",
  ),
  pause: z.object({
    approval: z.boolean().default(false).describe(
      "Wait, once the step is done, for `kubectl edgeroll approve` (the annotation " +
        "apps.edgeroll.dev/approved-step: <revision>/<step>).",
    ),
    soakSeconds: z.number().int().min(1).max(maxSoakSeconds).optional().describe(
      "Wait this long once the step is done; an updated pod of the covered nodes that turns " +
        "unavailable restarts the wait.",
    ),
  }).optional(),
  checks: z.array(z.string().max(63)).max(8).optional().describe(
    "Analysis checks (names from rollingUpdate.analysis.checks) that must pass, once the step " +
      "is done, for each domain it reached before the next step starts (ADR 0055).",
  ),
});
export type PlanStep = z.infer<typeof PlanStep>;

export const RolloutPlan = z.object({
  domainLabel: z.string().min(1).max(317).describe(
    "The node label whose values are the plan's domains (topology.kubernetes.io/zone, " +
      "apps.openyurt.io/nodepool, any key); nodes without it are one domain of their own.",
  ),
  firstDomains: z.array(z.string().max(63)).max(maxPlanDomains).default([]).describe(
    "Domains rolled first, in this order; the others follow by name, the unlabelled nodes last.",
  ),
  maxConcurrentDomains: z.number().int().min(1).max(maxPlanDomains).default(1).describe(
    "Domains with a node being updated at once.",
  ),
  domainMaxUnavailable: IntOrString.optional().describe(
    "Nodes of one domain being updated at once, an int or a percent of the domain's desired " +
      "nodes (rounded up), beside the set's maxUnavailable or maxSurge.",
  ),
  steps: z.array(PlanStep).min(1).max(50).describe(
    "Cumulative targets over the plan's order; the last one is `nodes: 100%`.",
  ),
});
export type RolloutPlan = z.infer<typeof RolloutPlan>;
/** What a user writes: every defaulted field optional. */
export type RolloutPlanInput = z.input<typeof RolloutPlan>;

/** Where an AdvancedDaemonSet's plan is written. */
export const planFieldPath = "spec.updateStrategy.rollingUpdate.plan";

/**
 * Where the plan of a Kruise or OpenYurt DaemonSet is written (ADR 0053): their schemas have no
 * field for it. The value is the plan as JSON, the fields of `planFieldPath`.
 */
export const rolloutPlanAnnotation = "apps.edgeroll.dev/rollout-plan";
export const planAnnotationPath = annotationPath(rolloutPlanAnnotation);
/** A plan of 50 steps and 100 first domains fits in a few KiB: more is not a plan. */
export const maxPlanAnnotationBytes = 32 * 1024;

/** A plan read from its annotation, each problem under the annotation's path; none when absent. */
export const readPlanAnnotation = (annotations: Record<string, string> | undefined) =>
  readJsonAnnotation(
    annotations,
    rolloutPlanAnnotation,
    RolloutPlan,
    "a rollout plan",
    maxPlanAnnotationBytes,
  );

/**
 * What is wrong with a plan before any node is read: a step with neither or both targets, a
 * malformed count, a last step short of every node, a per-domain budget of 0 with no surge.
 * `partition` and `selector` beside a plan are two answers to "which nodes now" (ADR 0050).
 * `planPath` is where the plan was written; `partitionWrittenBy`, the controller that writes the
 * partition when one does (Kruise Rollout, ADR 0053), so the operator knows which to remove.
 */
export function rolloutPlanIssues(
  plan: RolloutPlan,
  rollingUpdate: {
    partition?: IntOrString;
    selector?: unknown;
    surges: boolean;
    partitionWrittenBy?: string;
  },
  planPath = planFieldPath,
): FieldIssue[] {
  // A key no node can carry would order every node as unlabelled, silently.
  const issues: FieldIssue[] = labelKeyIssues(plan.domainLabel, `${planPath}.domainLabel`);
  plan.steps.forEach((step, i) => {
    const path = `${planPath}.steps[${i}]`;
    if ((step.nodes === undefined) === (step.domains === undefined)) {
      issues.push({ path, message: "needs exactly one of nodes and domains" });
    }
    const problem = step.nodes !== undefined &&
      intOrPercentProblem(step.nodes, { allowZero: false });
    if (problem) issues.push({ path: `${path}.nodes`, message: problem });
  });
  const last = plan.steps.length - 1;
  if (plan.steps[last].nodes !== "100%") {
    issues.push({
      path: `${planPath}.steps[${last}]`,
      message: 'the last step must reach every node: nodes: "100%"',
    });
  }
  const seen = new Set<string>();
  plan.firstDomains.forEach((domain, i) => {
    if (seen.has(domain)) {
      issues.push({ path: `${planPath}.firstDomains[${i}]`, message: `"${domain}" is repeated` });
    }
    seen.add(domain);
  });
  if (plan.domainMaxUnavailable !== undefined) {
    const path = `${planPath}.domainMaxUnavailable`;
    const problem = intOrPercentProblem(plan.domainMaxUnavailable, { allowZero: true });
    if (problem) issues.push({ path, message: problem });
    else if (isZero(plan.domainMaxUnavailable) && !rollingUpdate.surges) {
      issues.push({ path, message: "cannot be 0 when maxSurge is 0: no node could be updated" });
    }
  }
  if (rollingUpdate.partition !== undefined && !isZero(rollingUpdate.partition)) {
    issues.push({
      path: "spec.updateStrategy.rollingUpdate.partition",
      message: "may not be set with a plan: the plan's steps say which nodes are updated" +
        (rollingUpdate.partitionWrittenBy
          ? ` (${rollingUpdate.partitionWrittenBy}, which controls this set, writes it: a set ` +
            `takes a Rollout's steps or a plan, not both)`
          : ""),
    });
  }
  if (rollingUpdate.selector !== undefined) {
    issues.push({
      path: "spec.updateStrategy.rollingUpdate.selector",
      message: "may not be set with a plan: the plan's steps say which nodes are updated",
    });
  }
  return issues;
}

/** The name status gives the nodes without the plan's label. */
export function unlabelledDomain(domainLabel: string): string {
  return `(no ${domainLabel})`;
}

export const PlanState = z.enum([
  "Rolling",
  "Analyzing",
  "Soaking",
  "AwaitingApproval",
  "Done",
  "Stopped",
]);
export type PlanState = z.infer<typeof PlanState>;

/**
 * Why a rollout stopped: by itself (ADR 0035: its failure budget, a plan's domain over its own, its
 * progress deadline, a failed check), or, under a plan, by an operator's abort.
 */
export const StopReason = z.enum([
  "FailureBudgetExceeded",
  "ProgressDeadlineExceeded",
  "AnalysisFailed",
  "Aborted",
]);
export type StopReason = z.infer<typeof StopReason>;

/**
 * A domain's state: not started, being updated, waiting on the step's checks or pause with some
 * of its nodes updated (the canary's domain), every Ready node updated, stopped (the rollout's
 * stop, an abort or a failed check), or going back to the last complete revision after a failed
 * check.
 */
export const DomainState = z.enum([
  "Pending",
  "Rolling",
  "Analyzing",
  "Soaking",
  "AwaitingApproval",
  "Done",
  "Stopped",
  "RolledBack",
]);
export type DomainState = z.infer<typeof DomainState>;

/** Where the plan of `revision` stands: written by the controller, read by the next call. */
export const RolloutPlanStatus = z.object({
  revision: z.string(),
  /**
   * The step being rolled or paused after, numbered from 1 as Kruise Rollout numbers its steps,
   * and its target in nodes of the order.
   */
  step: z.number().int().min(1),
  steps: z.number().int().min(1),
  target: z.number().int().min(0),
  state: PlanState,
  /** RFC 3339: since when the current step has been done, its soak counted from then. */
  doneSince: z.string().optional(),
  /** Why the plan is Stopped, and the domain over its own failure budget when that stopped it. */
  stop: z.object({ reason: StopReason, domain: z.string().optional() }).optional(),
  /** The revision whose stopped rollout was rolled back to this one: no step holds the return. */
  rollbackFrom: z.string().optional(),
  domains: z.array(z.object({
    name: z.string(),
    state: DomainState,
    /** Desired nodes, those running the revision available, those NotReady or unreachable. */
    nodes: z.number().int(),
    updated: z.number().int(),
    unreachable: z.number().int(),
    /** `domainMaxUnavailable` resolved against the domain's desired nodes, when the plan sets it. */
    maxUnavailable: z.number().int().min(0).optional(),
  })).max(maxPlanDomains + 1),
});
export type RolloutPlanStatus = z.infer<typeof RolloutPlanStatus>;

/**
 * Written by `kubectl edgeroll approve`: `<revision>/<step>` (steps numbered from 1) passes that
 * step's pause and the earlier ones.
 */
export const approvedStepAnnotation = "apps.edgeroll.dev/approved-step";
/** Written by `kubectl edgeroll promote`: `<revision>` passes every remaining pause. */
export const promotedAnnotation = "apps.edgeroll.dev/promoted";
/** Written by `kubectl edgeroll abort`: `<revision>` stops its rollout. */
export const abortedAnnotation = "apps.edgeroll.dev/aborted";

/** The operator's answers to a plan, read from the set's annotations. */
export interface PlanAnswers {
  approved?: { revision: string; step: number };
  promoted?: string;
  aborted?: string;
}

/**
 * The answers an operator wrote. A malformed approval approves nothing: a Warning notice says so
 * (the rollout goes on waiting, as it would without it, rather than stopping as InvalidSpec).
 */
export function readPlanAnswers(
  annotations: Record<string, string> | undefined,
): { answers: PlanAnswers; notices: Notice[] } {
  const answers: PlanAnswers = {};
  const notices: Notice[] = [];
  const approved = annotations?.[approvedStepAnnotation];
  if (approved !== undefined) {
    const match = /^([^/]+)\/(\d{1,3})$/.exec(approved);
    if (match) answers.approved = { revision: match[1], step: Number(match[2]) };
    else {
      notices.push({
        type: "Warning",
        path: `metadata.annotations[${approvedStepAnnotation}]`,
        message: `must be <revision>/<step>, got "${approved}": it approves nothing`,
      });
    }
  }
  const promoted = annotations?.[promotedAnnotation];
  if (promoted !== undefined) answers.promoted = promoted;
  const aborted = annotations?.[abortedAnnotation];
  if (aborted !== undefined) answers.aborted = aborted;
  return { answers, notices };
}
