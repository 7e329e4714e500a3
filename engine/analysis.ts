/**
 * Analysis checks' phase (ADR 0055): each measurement the controller took judged against its
 * check's ranges, folded into the check's standing per domain, and the verdicts the rollout plan
 * reads: a step's gate passed, failed or waiting; the domains a failed check stopped; whether a
 * check of the whole set failed. Judged once per call (`judgeAnalysis`), read only after: the
 * gates and bakes (`gateOf`, `bakeOf`) answer the standings they asked for, which
 * `analysisOutcome` turns into status, Events and wake-ups. What is due next is
 * `dueMeasurements`, read from the previous status before anything is measured. Pure.
 */
import {
  type Analysis,
  type AnalysisCheck,
  type AnalysisStatus,
  type CheckStatus,
  keptMeasurements,
  type Measurement,
  type MeasurementPhase,
  perDomain,
  standingKey as keyOf,
  type ValueRange,
} from "../api/analysis.ts";
import type { EpochMillis, PlanEvent } from "../api/plan.ts";
import type { PodTemplateSpec } from "../api/kube-objects.ts";
import { unlabelledDomain } from "../api/rollout-plan.ts";
import { revisionTemplateOf } from "./failures.ts";
import type { NodeView } from "./node-view.ts";
import { formatTime, parseTime } from "./pod-node-state.ts";

/** A measurement judged: its phase, the value shown, and why when it is not a pass. */
export interface Judged {
  phase: MeasurementPhase;
  value?: string;
  message?: string;
}

const inRange = (value: number | string | boolean, range: ValueRange): boolean => {
  if (range.equals !== undefined) return String(value) === range.equals;
  if (typeof value !== "number") return false;
  return (range.min === undefined || value >= range.min) &&
    (range.max === undefined || value <= range.max);
};

/**
 * One value against the check's ranges (Argo's rule): with only a success range a value outside
 * fails; with only a failure range a value outside passes; with both, a value in neither decides
 * nothing.
 */
function judgeValue(check: AnalysisCheck, value: number | string | boolean): MeasurementPhase {
  const { successCondition: success, failureCondition: failure } = check;
  if (typeof value === "number" && Number.isNaN(value)) return "Inconclusive";
  if (failure && inRange(value, failure)) return "Failed";
  if (success) {
    if (inRange(value, success)) return "Passed";
    return failure ? "Inconclusive" : "Failed";
  }
  return "Passed";
}

const shown = (value: unknown) => String(value).slice(0, 64);

/**
 * A measurement judged: no answer, no series, NaN or null is inconclusive (never a pass); an HTTP
 * answer outside 2xx fails; several series must each pass.
 */
export function judgeMeasurement(check: AnalysisCheck, m: Measurement): Judged {
  if (m.refused !== undefined) return { phase: "Inconclusive", message: m.refused };
  if (m.error !== undefined) return { phase: "Inconclusive", message: m.error };
  if (m.httpStatus !== undefined && (m.httpStatus < 200 || m.httpStatus > 299)) {
    return { phase: "Failed", value: `HTTP ${m.httpStatus}`, message: `answered ${m.httpStatus}` };
  }
  if (check.http && check.http.jsonPath === undefined) {
    return { phase: "Passed", value: `HTTP ${m.httpStatus ?? 200}` };
  }
  const values = m.values ?? [];
  if (values.length === 0) {
    return {
      phase: "Inconclusive",
      message: check.prometheus ? "no series" : `no value at ${check.http?.jsonPath}`,
    };
  }
  const phases = values.map((v) => (v === null ? "Inconclusive" : judgeValue(check, v)));
  const worst = phases.indexOf("Failed") >= 0
    ? phases.indexOf("Failed")
    : phases.indexOf("Inconclusive");
  const phase: MeasurementPhase = worst < 0 ? "Passed" : phases[worst];
  const value = shown(values[Math.max(worst, 0)]);
  if (phase === "Passed") return { phase, value };
  const of = values.length > 1 ? ` (series ${worst + 1} of ${values.length})` : "";
  return {
    phase,
    value,
    message: phase === "Failed" ? `${value} fails${of}` : `${value} decides nothing${of}`,
  };
}

/** What a gate or a bake still waits for of one standing: `errors in zone-a (1 of 3)`. */
const undecidedText = (s: CheckStatus, check: AnalysisCheck) =>
  `${s.check}${s.domain !== undefined ? ` in ${s.domain}` : ""} (${
    s.passed + s.failed
  } of ${check.count}${s.phase === "Inconclusive" ? ", inconclusive" : ""})`;

/** A gate's verdict over the domains its step reached. */
export interface GateVerdict {
  /** Every domain not stopped passed. */
  passed: boolean;
  /** Domains still measured, or whose last measurement decided nothing. */
  waiting: string[];
  /** What the gate waits for, in words. */
  why?: string;
}

export interface AnalysisInput {
  analysis: Analysis;
  /** Each plan step's check names, by step index. */
  stepChecks: readonly (readonly string[] | undefined)[];
  hash: string;
  previous?: AnalysisStatus;
  measurements: readonly Measurement[];
  /** The operator's resume value (`<revision>/<anything>`): clears the revision's failures. */
  resume?: string;
  /** The `queriesHash` of the queries Prometheus accepted this call, when they were sent. */
  validatedQueriesHash?: string;
  now: EpochMillis;
}

/**
 * The checks' standing judged once per plan call, from the previous status and this call's
 * measurements (ADR 0055): read by the rollout plan's gates and bakes, never changed by them.
 */
export interface AnalysisJudgement {
  readonly input: AnalysisInput;
  readonly checks: ReadonlyMap<string, AnalysisCheck>;
  /** Each standing by `standingKey`, in the order the status lists them. */
  readonly standings: ReadonlyMap<string, Readonly<CheckStatus>>;
  readonly resumedWith?: string;
  /** The Events of the measurements judged: a check failed, passed, or decides nothing. */
  readonly events: readonly PlanEvent[];
  /** A measurement of this call was counted (passed or failed) by an undecided standing. */
  readonly counted: boolean;
  /** Domains with a failed check of this revision: no node of theirs is updated further. */
  readonly stoppedDomains: ReadonlySet<string>;
  /** A check measured for the whole set failed: the rollout stops, as its failure budget would. */
  readonly setFailed?: Readonly<CheckStatus>;
  /**
   * A check of the revision failed (a domain's or the whole set's, a gate or a bake): the
   * revision is not complete, however its pods stand, and is never the one a rollback returns to.
   */
  readonly failed: boolean;
}

/**
 * A standing a gate or a bake asked for: it is measured on, and written back as status. `begun`
 * is the standing it starts as when the judgement has none; `passes`, a bake that reached its
 * count on a complete domain.
 */
export interface StandingAsked {
  key: string;
  begun: Readonly<CheckStatus>;
  passes: boolean;
}

/** A gate's or a bake's verdict, and the standings it asked for. */
export interface Asked {
  verdict: GateVerdict;
  asked: StandingAsked[];
}

/** The checks' standing after this call's measurements: the carried standings, each judged. */
export function judgeAnalysis(input: AnalysisInput): AnalysisJudgement {
  const { analysis, previous, hash } = input;
  const checks = new Map(analysis.checks.map((c) => [c.name, c]));
  const carried = previous?.revision === hash ? previous : undefined;
  let resumedWith = carried?.resumedWith;
  const resuming = input.resume !== undefined && input.resume.split("/")[0] === hash &&
    input.resume !== resumedWith;
  if (resuming) resumedWith = input.resume;
  // Working copies, changed only while this function judges.
  const standings = new Map<string, CheckStatus>();
  for (const s of carried?.checks ?? []) {
    if (!checks.has(s.check)) continue;
    // A resume acknowledges the failures: their checks start over.
    if (resuming && s.phase === "Failed") continue;
    standings.set(keyOf(s.check, s.domain, s.step), structuredClone(s));
  }
  const events: PlanEvent[] = [];
  let counted = false;
  for (const m of input.measurements) {
    const check = checks.get(m.check);
    if (!check) continue;
    const judged = judgeMeasurement(check, m);
    const at = parseTime(m.at) ?? input.now;
    for (const s of standings.values()) {
      if (s.check !== m.check || (s.domain ?? "") !== (m.domain ?? "")) continue;
      if (s.phase === "Passed" || s.phase === "Failed") continue;
      if (judged.phase === "Passed") s.passed++;
      else if (judged.phase === "Failed") s.failed++;
      else s.inconclusive++;
      if (judged.phase !== "Inconclusive") counted = true;
      s.measurements = [
        ...s.measurements,
        {
          at: formatTime(at),
          phase: judged.phase,
          ...(judged.value !== undefined ? { value: judged.value } : {}),
          ...(judged.message !== undefined ? { message: judged.message.slice(0, 256) } : {}),
        },
      ].slice(-keptMeasurements);
      s.nextAt = formatTime(at + check.intervalSeconds * 1000);
      const event = decide(s, check, judged, hash);
      if (event) events.push(event);
    }
  }
  const all = [...standings.values()];
  const setFailed = all.find((s) => s.phase === "Failed" && s.domain === undefined);
  return {
    input,
    checks,
    standings,
    ...(resumedWith !== undefined ? { resumedWith } : {}),
    events,
    counted,
    stoppedDomains: new Set(
      all.flatMap((s) => s.phase === "Failed" && s.domain !== undefined ? [s.domain] : []),
    ),
    ...(setFailed ? { setFailed } : {}),
    failed: all.some((s) => s.phase === "Failed"),
  };
}

/** A standing's phase after a measurement judged, changed in place, and the Event it tells. */
function decide(
  s: CheckStatus,
  check: AnalysisCheck,
  judged: Judged,
  hash: string,
): PlanEvent | undefined {
  const where = s.domain !== undefined ? ` in ${s.domain}` : "";
  const of = s.step !== undefined ? `step ${s.step}'s check` : "check";
  if (s.failed > check.failureLimit) {
    s.phase = "Failed";
    delete s.nextAt;
    return {
      type: "Warning",
      reason: "AnalysisFailed",
      message:
        `revision ${hash}: ${of} ${s.check}${where} failed: ${s.failed} failed measurements, more than failureLimit ${check.failureLimit} (last: ${
          judged.message ?? judged.value
        })`,
    };
  }
  if (s.step !== undefined && s.passed + s.failed >= check.count) {
    s.phase = "Passed";
    delete s.nextAt;
    return passedEvent(s, hash);
  }
  if (judged.phase === "Inconclusive") {
    const wasInconclusive = s.phase === "Inconclusive";
    s.phase = "Inconclusive";
    if (wasInconclusive) return undefined;
    return {
      type: "Warning",
      reason: "AnalysisInconclusive",
      message: `revision ${hash}: ${of} ${s.check}${where} decides nothing: ${
        judged.message ?? "no value"
      }; waiting`,
    };
  }
  s.phase = "Running";
  return undefined;
}

/** A standing that reached its count within its failure limit: measured no more, told once. */
function passedEvent(s: Readonly<CheckStatus>, hash: string): PlanEvent {
  return {
    type: "Normal",
    reason: "AnalysisPassed",
    message: `revision ${hash}: ${s.step !== undefined ? `step ${s.step}'s ` : ""}check ${s.check}${
      s.domain !== undefined ? ` in ${s.domain}` : ""
    } passed: ${s.passed} of ${s.passed + s.failed} measurements passed`,
  };
}

/** The standing of a check for a domain (and step) as judged, or as it begins now. */
function standingOf(
  judgement: AnalysisJudgement,
  check: AnalysisCheck,
  domain: string | undefined,
  step?: number,
): { key: string; standing: Readonly<CheckStatus> } {
  const d = perDomain(check) ? domain : undefined;
  const key = keyOf(check.name, d, step);
  const standing = judgement.standings.get(key) ?? {
    check: check.name,
    ...(d !== undefined ? { domain: d } : {}),
    ...(step !== undefined ? { step } : {}),
    phase: "Running",
    passed: 0,
    failed: 0,
    inconclusive: 0,
    // The first measurement comes with the next call: the controller measures before it plans.
    nextAt: formatTime(judgement.input.now + 1000),
    measurements: [],
  };
  return { key, standing };
}

/**
 * The gate of step `step` (numbered from 1) over the domains it reached: passed when each
 * domain's every check passed; a domain with a failed check is left to `stoppedDomains`.
 */
export function gateOf(
  judgement: AnalysisJudgement,
  step: number,
  domains: readonly string[],
): Asked {
  const names = judgement.input.stepChecks[step - 1] ?? [];
  const waiting = new Set<string>();
  const undecided: string[] = [];
  const asked: StandingAsked[] = [];
  for (const domain of domains) {
    for (const name of names) {
      const check = judgement.checks.get(name)!;
      const { key, standing: s } = standingOf(judgement, check, domain, step);
      asked.push({ key, begun: s, passes: false });
      if (s.phase === "Passed" || s.phase === "Failed") continue;
      waiting.add(domain);
      undecided.push(undecidedText(s, check));
    }
  }
  const open = [...waiting].filter((d) => !judgement.stoppedDomains.has(d));
  return {
    verdict: {
      passed: open.length === 0 && !judgement.setFailed,
      waiting: open,
      ...(undecided.length > 0 ? { why: undecided.slice(0, 10).join(", ") } : {}),
    },
    asked,
  };
}

/**
 * The background checks of each domain with a node on the revision: measured while it rolls,
 * and after, until the domain is `complete` and the check has counted `count` measurements
 * there (its bake); then passed, and measured no more. A check of the whole set passes once
 * every domain is complete. Settled when every one has passed. A revision that never rolled
 * (a first placement, nodes that came updated) begins no bake.
 */
export function bakeOf(
  judgement: AnalysisJudgement,
  domains: readonly { name: string; complete: boolean }[],
  /** Begin measuring a domain that has no standing yet (false: only those begun go on). */
  begin = true,
): Asked {
  const waiting = new Set<string>();
  const undecided: string[] = [];
  const asked: StandingAsked[] = [];
  for (const name of judgement.input.analysis.background) {
    const check = judgement.checks.get(name)!;
    const targets = perDomain(check)
      ? domains.map((d) => ({ domain: d.name as string | undefined, complete: d.complete }))
      : domains.length > 0
      ? [{ domain: undefined, complete: domains.every((d) => d.complete) }]
      : [];
    for (const { domain, complete } of targets) {
      if (!begin && !judgement.standings.has(keyOf(check.name, domain, undefined))) continue;
      const { key, standing: s } = standingOf(judgement, check, domain);
      const decided = s.phase === "Failed" || s.phase === "Passed";
      const passes = !decided && complete && s.passed + s.failed >= check.count;
      asked.push({ key, begun: s, passes });
      if (decided || passes) continue;
      for (const d of domain !== undefined ? [domain] : domains.map((d) => d.name)) {
        waiting.add(d);
      }
      undecided.push(undecidedText(s, check));
    }
  }
  return {
    verdict: {
      passed: waiting.size === 0,
      waiting: [...waiting],
      ...(undecided.length > 0 ? { why: undecided.slice(0, 10).join(", ") } : {}),
    },
    asked,
  };
}

/** What the checks come to once this call's gates and bakes asked for their standings. */
export interface AnalysisOutcome {
  /** The status to write: the standings asked this call, and every failure of the revision. */
  status: AnalysisStatus;
  /** A check asked this call still measures (a gate, a bake): the revision is not complete. */
  pending: boolean;
  events: PlanEvent[];
  wakeUps: EpochMillis[];
}

/**
 * The standings asked, in the order they were asked: each begun when it had none, passed when
 * its bake did (told once), and measured again at its `nextAt`; the others (earlier steps'
 * gates) dropped, a failure kept.
 */
export function analysisOutcome(
  judgement: AnalysisJudgement,
  asked: readonly StandingAsked[],
): AnalysisOutcome {
  const { input } = judgement;
  const standings = new Map(judgement.standings);
  const keys = new Set<string>();
  const events = [...judgement.events];
  const wakeUps: EpochMillis[] = [];
  for (const { key, begun, passes } of asked) {
    keys.add(key);
    let s = standings.get(key);
    if (!s) standings.set(key, s = begun);
    const next = parseTime(s.nextAt);
    if (next !== undefined) wakeUps.push(Math.max(next, input.now + 1000));
    if (passes && s.phase !== "Passed" && s.phase !== "Failed") {
      const { nextAt: _measuredNoMore, ...rest } = s;
      standings.set(key, { ...rest, phase: "Passed" });
      events.push(passedEvent(s, input.hash));
    }
  }
  const written = [...standings.entries()].filter(([key, s]) =>
    keys.has(key) || s.phase === "Failed"
  );
  const validated = input.validatedQueriesHash ?? input.previous?.validatedQueriesHash;
  return {
    status: {
      revision: input.hash,
      checks: written.map(([, s]) => s),
      ...(judgement.resumedWith !== undefined ? { resumedWith: judgement.resumedWith } : {}),
      ...(validated !== undefined ? { validatedQueriesHash: validated } : {}),
    },
    pending: written.some(([key, s]) =>
      keys.has(key) && (s.phase === "Running" || s.phase === "Inconclusive")
    ),
    events,
    wakeUps,
  };
}

/**
 * The nodes of the domains a failed check stopped, pinned to the last revision that completed
 * when the set's analysis asks for `Rollback` (ADR 0055): their pods go back to it, within the
 * same budget, while the other domains go on. None without a plan, a failure, or that revision's
 * template.
 */
export function rollbackPins(
  context: {
    analysis: Analysis;
    domainLabel?: string;
    hash: string;
    lastComplete?: string;
    templates: ReadonlyMap<string, PodTemplateSpec>;
  },
  judgement: AnalysisJudgement,
  views: readonly NodeView[],
):
  | {
    domains: ReadonlySet<string>;
    nodes: Map<string, { hash: string; template: PodTemplateSpec }>;
  }
  | undefined {
  const { analysis, domainLabel, hash, lastComplete } = context;
  if (analysis.onFailure !== "Rollback" || domainLabel === undefined) return undefined;
  const domains = judgement.stoppedDomains;
  if (domains.size === 0 || !lastComplete || lastComplete === hash) return undefined;
  const template = revisionTemplateOf(context.templates, lastComplete);
  if (!template) return undefined;
  const unlabelled = unlabelledDomain(domainLabel);
  const nodes = new Map<string, { hash: string; template: PodTemplateSpec }>();
  for (const view of views) {
    const domain = view.node.metadata.labels?.[domainLabel] ?? unlabelled;
    if (domains.has(domain)) nodes.set(view.name, { hash: lastComplete, template });
  }
  return { domains, nodes };
}
