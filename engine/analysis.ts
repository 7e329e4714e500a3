/**
 * Analysis checks' phase (ADR 0055): each measurement the controller took judged against its
 * check's ranges, folded into the check's standing per domain, and the verdicts the rollout plan
 * reads: a step's gate passed, failed or waiting; the domains a failed check stopped; whether a
 * check of the whole set failed. What is due next is `dueMeasurements`, read from the previous
 * status before anything is measured. Pure.
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
 * The checks' standing for one plan call: built from the previous status and this call's
 * measurements, then asked by the rollout plan for its gates and its background checks, and
 * written back as status. Within one call only: a pure function's working memory.
 */
export class AnalysisBook {
  readonly events: PlanEvent[] = [];
  readonly wakeUps: EpochMillis[] = [];
  private readonly standing = new Map<string, CheckStatus>();
  private readonly checks: Map<string, AnalysisCheck>;
  private readonly resumedWith?: string;
  /** Standings asked for this call: the others (earlier steps' gates) are dropped. */
  private readonly asked = new Set<string>();
  /** A measurement of this call was counted (passed or failed) by an undecided standing. */
  private countedOne = false;

  constructor(private readonly input: AnalysisInput) {
    const { analysis, previous, hash } = input;
    this.checks = new Map(analysis.checks.map((c) => [c.name, c]));
    const carried = previous?.revision === hash ? previous : undefined;
    let resumedWith = carried?.resumedWith;
    const resuming = input.resume !== undefined && input.resume.split("/")[0] === hash &&
      input.resume !== resumedWith;
    if (resuming) resumedWith = input.resume;
    this.resumedWith = resumedWith;
    for (const s of carried?.checks ?? []) {
      if (!this.checks.has(s.check)) continue;
      // A resume acknowledges the failures: their checks start over.
      if (resuming && s.phase === "Failed") continue;
      this.standing.set(keyOf(s.check, s.domain, s.step), structuredClone(s));
    }
    for (const m of input.measurements) this.record(m);
  }

  /** A measurement taken for every undecided standing of its check and domain. */
  private record(m: Measurement) {
    const check = this.checks.get(m.check);
    if (!check) return;
    const judged = judgeMeasurement(check, m);
    const at = parseTime(m.at) ?? this.input.now;
    for (const s of this.standing.values()) {
      if (s.check !== m.check || (s.domain ?? "") !== (m.domain ?? "")) continue;
      if (s.phase === "Passed" || s.phase === "Failed") continue;
      if (judged.phase === "Passed") s.passed++;
      else if (judged.phase === "Failed") s.failed++;
      else s.inconclusive++;
      if (judged.phase !== "Inconclusive") this.countedOne = true;
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
      this.decide(s, check, judged);
    }
  }

  private decide(s: CheckStatus, check: AnalysisCheck, judged: Judged) {
    const where = s.domain !== undefined ? ` in ${s.domain}` : "";
    const of = s.step !== undefined ? `step ${s.step}'s check` : "check";
    if (s.failed > check.failureLimit) {
      s.phase = "Failed";
      delete s.nextAt;
      this.events.push({
        type: "Warning",
        reason: "AnalysisFailed",
        message:
          `revision ${this.input.hash}: ${of} ${s.check}${where} failed: ${s.failed} failed measurements, more than failureLimit ${check.failureLimit} (last: ${
            judged.message ?? judged.value
          })`,
      });
    } else if (s.step !== undefined && s.passed + s.failed >= check.count) {
      this.pass(s);
    } else if (judged.phase === "Inconclusive") {
      if (s.phase !== "Inconclusive") {
        this.events.push({
          type: "Warning",
          reason: "AnalysisInconclusive",
          message: `revision ${this.input.hash}: ${of} ${s.check}${where} decides nothing: ${
            judged.message ?? "no value"
          }; waiting`,
        });
      }
      s.phase = "Inconclusive";
    } else s.phase = "Running";
  }

  /** A standing that reached its count within its failure limit: measured no more, told once. */
  private pass(s: CheckStatus) {
    s.phase = "Passed";
    delete s.nextAt;
    this.events.push({
      type: "Normal",
      reason: "AnalysisPassed",
      message: `revision ${this.input.hash}: ${
        s.step !== undefined ? `step ${s.step}'s ` : ""
      }check ${s.check}${s.domain !== undefined ? ` in ${s.domain}` : ""} passed: ${s.passed} of ${
        s.passed + s.failed
      } measurements passed`,
    });
  }

  /** The standing of a check for a domain (and step), begun now when it has none. */
  private stand(check: AnalysisCheck, domain: string | undefined, step?: number): CheckStatus {
    const d = perDomain(check) ? domain : undefined;
    const key = keyOf(check.name, d, step);
    this.asked.add(key);
    let s = this.standing.get(key);
    if (!s) {
      s = {
        check: check.name,
        ...(d !== undefined ? { domain: d } : {}),
        ...(step !== undefined ? { step } : {}),
        phase: "Running",
        passed: 0,
        failed: 0,
        inconclusive: 0,
        // The first measurement comes with the next call: the controller measures before it plans.
        nextAt: formatTime(this.input.now + 1000),
        measurements: [],
      };
      this.standing.set(key, s);
    }
    const next = parseTime(s.nextAt);
    if (next !== undefined) this.wakeUps.push(Math.max(next, this.input.now + 1000));
    return s;
  }

  /**
   * The gate of step `step` (numbered from 1) over the domains it reached: passed when each
   * domain's every check passed; a domain with a failed check is left to `stoppedDomains`.
   */
  gate(step: number, domains: readonly string[]): GateVerdict {
    const names = this.input.stepChecks[step - 1] ?? [];
    const waiting = new Set<string>();
    const undecided: string[] = [];
    for (const domain of domains) {
      for (const name of names) {
        const check = this.checks.get(name)!;
        const s = this.stand(check, domain, step);
        if (s.phase === "Passed" || s.phase === "Failed") continue;
        waiting.add(domain);
        undecided.push(undecidedText(s, check));
      }
    }
    const stopped = this.stoppedDomains();
    const open = [...waiting].filter((d) => !stopped.has(d));
    return {
      passed: open.length === 0 && !this.setFailed(),
      waiting: open,
      ...(undecided.length > 0 ? { why: undecided.slice(0, 10).join(", ") } : {}),
    };
  }

  /**
   * The background checks of each domain with a node on the revision: measured while it rolls,
   * and after, until the domain is `complete` and the check has counted `count` measurements
   * there (its bake); then passed, and measured no more. A check of the whole set passes once
   * every domain is complete. Settled when every one has passed. A revision that never rolled
   * (a first placement, nodes that came updated) begins no bake.
   */
  background(
    domains: readonly { name: string; complete: boolean }[],
    /** Begin measuring a domain that has no standing yet (false: only those begun go on). */
    begin = true,
  ): GateVerdict {
    const waiting = new Set<string>();
    const undecided: string[] = [];
    for (const name of this.input.analysis.background) {
      const check = this.checks.get(name)!;
      const targets = perDomain(check)
        ? domains.map((d) => ({ domain: d.name as string | undefined, complete: d.complete }))
        : domains.length > 0
        ? [{ domain: undefined, complete: domains.every((d) => d.complete) }]
        : [];
      for (const { domain, complete } of targets) {
        if (!begin && !this.standing.has(keyOf(check.name, domain, undefined))) continue;
        const s = this.stand(check, domain);
        if (s.phase === "Failed" || s.phase === "Passed") continue;
        if (complete && s.passed + s.failed >= check.count) {
          this.pass(s);
          continue;
        }
        for (const d of domain !== undefined ? [domain] : domains.map((d) => d.name)) {
          waiting.add(d);
        }
        undecided.push(undecidedText(s, check));
      }
    }
    return {
      passed: waiting.size === 0,
      waiting: [...waiting],
      ...(undecided.length > 0 ? { why: undecided.slice(0, 10).join(", ") } : {}),
    };
  }

  /** A check asked this call still measures (a gate, a bake): the revision is not complete. */
  pending(): boolean {
    for (const [key, s] of this.standing) {
      if (this.asked.has(key) && (s.phase === "Running" || s.phase === "Inconclusive")) return true;
    }
    return false;
  }

  /**
   * A check of the revision failed (a domain's or the whole set's, a gate or a bake): the
   * revision is not complete, however its pods stand, and is never the one a rollback returns to.
   */
  failed(): boolean {
    for (const s of this.standing.values()) if (s.phase === "Failed") return true;
    return false;
  }

  /** A check counted a measurement this call: it moved toward its verdict. */
  counted(): boolean {
    return this.countedOne;
  }

  /** Domains with a failed check of this revision: no node of theirs is updated further. */
  stoppedDomains(): Set<string> {
    const stopped = new Set<string>();
    for (const s of this.standing.values()) {
      if (s.phase === "Failed" && s.domain !== undefined) stopped.add(s.domain);
    }
    return stopped;
  }

  /** A check measured for the whole set failed: the rollout stops, as its failure budget would. */
  setFailed(): CheckStatus | undefined {
    return [...this.standing.values()].find((s) => s.phase === "Failed" && s.domain === undefined);
  }

  /** The status to write: the standings asked this call, and every failure of the revision. */
  status(): AnalysisStatus {
    const checks = [...this.standing.entries()]
      .filter(([key, s]) => this.asked.has(key) || s.phase === "Failed")
      .map(([, s]) => s);
    const validated = this.input.validatedQueriesHash ?? this.input.previous?.validatedQueriesHash;
    return {
      revision: this.input.hash,
      checks,
      ...(this.resumedWith !== undefined ? { resumedWith: this.resumedWith } : {}),
      ...(validated !== undefined ? { validatedQueriesHash: validated } : {}),
    };
  }
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
  book: AnalysisBook,
  views: readonly NodeView[],
):
  | {
    domains: ReadonlySet<string>;
    nodes: Map<string, { hash: string; template: PodTemplateSpec }>;
  }
  | undefined {
  const { analysis, domainLabel, hash, lastComplete } = context;
  if (analysis.onFailure !== "Rollback" || domainLabel === undefined) return undefined;
  const domains = book.stoppedDomains();
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
