/**
 * The rollout over time, per domain of its plan (or the set as one domain): how many nodes are
 * updated and how many unavailable, against the budget. `status --watch` draws it as sparklines,
 * the dashboard as an SVG chart; each keeps the samples it took while it watched (a bounded
 * history in its own process: the controller keeps none). Pure.
 */
import type { Plan, Snapshot } from "../api/plan.ts";
import { unlabelledDomain } from "../api/rollout-plan.ts";
import { readSet, type SetReading } from "../engine/config.ts";

/** One domain of the chart: its name, its desired nodes, and its unavailability budget. */
export interface ChartDomain {
  name: string;
  nodes: number;
  /** Nodes that may be unavailable at once; undefined when no budget bounds it (OTA, OnDelete). */
  budget?: number;
}

export interface DomainCounts {
  updated: number;
  unavailable: number;
}

/** What one look at the set counts, domain by domain, in the plan's order. */
export interface ChartReading {
  revision?: string;
  domains: ChartDomain[];
  counts: Map<string, DomainCounts>;
}

/**
 * Each node's domain under the set's plan (its value of the plan's label, or the unlabelled
 * domain), or `whole` for every node of a set without a plan. The one grouping the chart and the
 * dashboard's tiles share.
 */
export function domainsOfNodes(
  snapshot: Snapshot,
  reading: SetReading,
  whole: string,
): Map<string, string> {
  const label = reading.ok ? reading.config.rolloutPlan?.plan.domainLabel : undefined;
  return new Map(snapshot.nodes.map((n) => [
    n.metadata.name ?? "",
    label === undefined ? whole : n.metadata.labels?.[label] ?? unlabelledDomain(label),
  ]));
}

/** The name of the chart's one domain when the set has no plan. */
export const wholeSet = "(all nodes)";

/**
 * The counts of the planner's node reports per domain: a node is updated when its pod of the
 * current revision is available, unavailable when it is reachable and has no available pod (a
 * cut-off node is neither: it holds no budget). Each domain's budget is the plan's
 * `domainMaxUnavailable` as the engine resolved it (`status.plan.domains`), within the set's.
 */
export function readChart(
  snapshot: Snapshot,
  planned: Plan,
  reading: SetReading = readSet(snapshot),
): ChartReading {
  const domainOfNode = domainsOfNodes(snapshot, reading, wholeSet);
  const planDomains = planned.status.plan?.domains ?? [];
  const order = planDomains.map((d) => d.name);
  const counts = new Map<string, DomainCounts>(order.map((d) => [d, empty()]));
  const nodes = new Map<string, number>();
  for (const report of planned.nodes) {
    const domain = domainOfNode.get(report.node) ?? wholeSet;
    const count = counts.get(domain) ?? counts.set(domain, empty()).get(domain)!;
    nodes.set(domain, (nodes.get(domain) ?? 0) + 1);
    if (report.revision === "new" && report.available) count.updated++;
    else if (!report.cutOff && !report.available) count.unavailable++;
  }
  const setBudget = planned.budget?.rule === "maxUnavailable" ? planned.budget.limit : undefined;
  const domains = [...counts.keys()].map((name) => {
    const size = nodes.get(name) ?? 0;
    const own = planDomains.find((d) => d.name === name)?.maxUnavailable;
    const budget = own !== undefined && setBudget !== undefined
      ? Math.min(own, setBudget)
      : own ?? setBudget;
    return { name, nodes: size, ...(budget !== undefined ? { budget } : {}) };
  });
  return { revision: planned.status.daemonSetHash, domains, counts };
}

const empty = (): DomainCounts => ({ updated: 0, unavailable: 0 });

export interface Sample extends DomainCounts {
  /** Milliseconds since the epoch. */
  at: number;
}

/**
 * The samples taken of one set, at most `limit` per domain (the oldest dropped), begun again when
 * the revision changes: a chart shows the rollout of one revision.
 */
export class RolloutHistory {
  #revision?: string;
  #domains: ChartDomain[] = [];
  #series = new Map<string, Sample[]>();

  constructor(readonly limit = 240) {}

  add(at: number, reading: ChartReading): void {
    if (reading.revision !== this.#revision) this.#series.clear();
    this.#revision = reading.revision;
    this.#domains = reading.domains;
    for (const { name } of reading.domains) {
      const series = this.#series.get(name) ?? this.#series.set(name, []).get(name)!;
      series.push({ at, ...reading.counts.get(name) ?? empty() });
      if (series.length > this.limit) series.splice(0, series.length - this.limit);
    }
    for (const name of this.#series.keys()) {
      if (!reading.counts.has(name)) this.#series.delete(name);
    }
  }

  /** Each domain of the last reading with its samples, in the plan's order. */
  charts(): { domain: ChartDomain; samples: Sample[] }[] {
    return this.#domains.map((domain) => ({
      domain,
      samples: this.#series.get(domain.name) ?? [],
    }));
  }
}

const bars = "▁▂▃▄▅▆▇█";

/** Values as a line of block characters, scaled to `max` (0 is the lowest block). */
export function sparkline(values: readonly number[], max: number): string {
  return values.map((v) =>
    bars[max <= 0 ? 0 : Math.min(bars.length - 1, Math.round((v / max) * (bars.length - 1)))]
  ).join("");
}

/** The last `width` samples of each domain as two sparklines, for `status --watch`. */
export function chartLines(history: RolloutHistory, width = 40): string[] {
  const charts = history.charts();
  if (charts.length === 0) return [];
  const nameWidth = Math.max(...charts.map((c) => c.domain.name.length));
  return charts.map(({ domain, samples }) => {
    const shown = samples.slice(-width);
    const last = shown.at(-1) ?? { updated: 0, unavailable: 0 };
    const scale = Math.max(1, domain.budget ?? 0, ...shown.map((s) => s.unavailable));
    return `  ${domain.name.padEnd(nameWidth)}  updated ${
      sparkline(shown.map((s) => s.updated), domain.nodes)
    } ${last.updated}/${domain.nodes}  unavailable ${
      sparkline(shown.map((s) => s.unavailable), scale)
    } ${last.unavailable}` + (domain.budget !== undefined ? ` of ${domain.budget}` : "");
  });
}

/**
 * One domain's samples as an SVG chart: updated (of its nodes) and unavailable over time, the
 * budget a dashed line on the unavailable scale. Time runs from the first sample to the last.
 */
export function chartSvg(domain: ChartDomain, samples: readonly Sample[]): string {
  const width = 240;
  const height = 64;
  const first = samples[0]?.at ?? 0;
  const span = Math.max(1, (samples.at(-1)?.at ?? 0) - first);
  const top = Math.max(1, domain.nodes);
  const x = (at: number) => ((at - first) / span * width).toFixed(1);
  const y = (v: number) => (height - (v / top) * (height - 2) - 1).toFixed(1);
  const line = (key: keyof DomainCounts) =>
    samples.length === 0
      ? ""
      : samples.length === 1
      ? `M0 ${y(samples[0][key])} H${width}`
      : `M${samples.map((s) => `${x(s.at)} ${y(s[key])}`).join(" L")}`;
  const budget = domain.budget !== undefined
    ? `<path class="budget" d="M0 ${y(domain.budget)} H${width}"/>`
    : "";
  const last = samples.at(-1);
  const label = `${domain.name}: ${last?.updated ?? 0}/${domain.nodes} updated, ` +
    `${last?.unavailable ?? 0} unavailable` +
    (domain.budget !== undefined ? ` of a budget of ${domain.budget}` : "");
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" ` +
    `role="img" aria-label="${escapeXml(label)}">${budget}` +
    `<path class="updated" d="${line("updated")}"/>` +
    `<path class="unavailable" d="${line("unavailable")}"/></svg>`;
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
