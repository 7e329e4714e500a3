/**
 * `/metrics` in Prometheus text format, on prom-client (which runs under Deno). One registry
 * per app, so tests and several apps in one process do not share counters.
 */
import client from "prom-client";
import type { AdvancedDaemonSetStatus } from "../api/advanced-daemonset.ts";
import type { BudgetUse } from "../api/plan.ts";
import type { RequestRecord } from "../kube/client.ts";
import type { ActionOutcome } from "../kube/executor.ts";

export class Metrics {
  readonly registry = new client.Registry();
  readonly #reconciles = new client.Counter({
    name: "edgeroll_reconciles_total",
    help: "Reconcile steps by result (acted, noop, partial, unmanaged, conflict, notfound, error).",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly #duration = new client.Histogram({
    name: "edgeroll_reconcile_duration_seconds",
    help: "Time of one reconcile step, read to answer.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly #requests = new client.Counter({
    name: "edgeroll_kube_requests_total",
    help: "Kubernetes API requests by verb and HTTP status (0: no answer), retries included.",
    labelNames: ["verb", "code"],
    registers: [this.registry],
  });
  readonly #watches = new client.Counter({
    name: "edgeroll_kube_watches_total",
    help: "Kubernetes watch requests the caches started (each holds a connection while open).",
    registers: [this.registry],
  });
  readonly #podActions = new client.Counter({
    name: "edgeroll_pods_updated_total",
    help: "Pod writes that took effect, by action type.",
    labelNames: ["action"],
    registers: [this.registry],
  });
  readonly #budget = new client.Gauge({
    name: "edgeroll_budget_in_use",
    help:
      "Nodes of a set holding a share of its update budget (maxUnavailable, or maxSurge when it surges) at its last reconcile; none for OnDelete and OTA.",
    labelNames: ["set"],
    registers: [this.registry],
  });
  readonly #setsByCondition = new client.Gauge({
    name: "edgeroll_sets",
    help: "Sets whose condition of this type is True, at their last reconcile.",
    labelNames: ["condition"],
    registers: [this.registry],
  });
  /** Last seen True conditions per set, to count sets by condition. */
  readonly #conditions = new Map<string, string[]>();

  observeReconcile(result: string, seconds: number): void {
    this.#reconciles.inc({ result });
    this.#duration.observe(seconds);
  }

  observeRequest(record: RequestRecord): void {
    this.#requests.inc({ verb: record.verb, code: String(record.status) });
  }

  observeWatch(): void {
    this.#watches.inc();
  }

  observeActions(outcomes: ActionOutcome[]): void {
    for (const { action, result } of outcomes) {
      if (result === "done" && action.type.endsWith("Pod")) {
        this.#podActions.inc({ action: action.type });
      }
    }
  }

  observeSet(set: string, status: AdvancedDaemonSetStatus, budget: BudgetUse | undefined): void {
    if (budget) this.#budget.set({ set }, budget.inUse);
    else this.#budget.remove({ set });
    const trueConditions = (status.conditions ?? []).filter((c) => c.status === "True").map((c) =>
      c.type
    );
    this.#conditions.set(set, trueConditions);
    this.#setsByCondition.reset();
    for (const types of this.#conditions.values()) {
      for (const condition of types) this.#setsByCondition.inc({ condition });
    }
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
