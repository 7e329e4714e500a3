/**
 * `edgeroll status ns/name`: a rollout as a person wants to see it — progress of updated over
 * desired, the budget in use, conditions, and the nodes it waits for and why. It reads the
 * cluster and asks the planner (a dry run), so it shows what the next reconcile would see.
 */
import { type Command, stringOption, UsageError } from "../lib/command.ts";
import { parseDuration } from "../lib/duration.ts";
import { readSet } from "../engine/config.ts";
import { plan } from "../engine/plan.ts";
import { budgetText, type Plan, type Snapshot } from "../api/plan.ts";
import type { RolloutPlanStatus } from "../api/rollout-plan.ts";
import type { MaintenanceStatus } from "../api/maintenance.ts";
import { groupLabel, groupTimes, windowsHeadline } from "./maintenance-text.ts";
import { checkCounts, checkLabel } from "./analysis-text.ts";
import { planHeadline } from "./plan-text.ts";
import { plural } from "../engine/conditions.ts";
import { clientNodeApi } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import { kruiseSetKind, setKey, type SetKind, setKinds, type SetRef } from "../api/set-ref.ts";
import { chartLines, readChart, RolloutHistory } from "./rollout-chart.ts";

const barWidth = 30;
const maxWaitingShown = 15;

/**
 * The rollout of `snapshot` in a few lines of text; with the `history` a watch has taken, its
 * course per domain too (updated and unavailable against the budget).
 */
export function renderStatus(
  ref: SetRef,
  snapshot: Snapshot,
  planned: Plan,
  history?: RolloutHistory,
): string {
  const status = planned.status;
  const desired = status.desiredNumberScheduled ?? 0;
  const updated = status.updatedNumberScheduled ?? 0;
  const filled = desired === 0 ? barWidth : Math.round((updated / desired) * barWidth);
  const reading = readSet(snapshot);
  const lines = [
    `${setKey(ref)}  generation ${snapshot.set.metadata.generation ?? "?"}` +
    (status.daemonSetHash ? `  revision ${status.daemonSetHash}` : ""),
    `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}] ${updated}/${desired} updated, ` +
    `${status.numberAvailable ?? 0} available, ${status.numberUnavailable ?? 0} unavailable`,
  ];
  if (reading.ok) {
    const { budget } = planned;
    lines.push(
      `budget: ${budget ? budgetText(budget) : "none"} (${reading.config.mode}` +
        (reading.config.paused ? ", paused" : "") + ")",
    );
  }
  if (status.plan) lines.push(...planLines(status.plan));
  if (status.maintenance) lines.push(...maintenanceLines(status.maintenance));
  if (status.analysis?.checks.length) {
    lines.push(
      "analysis:",
      ...status.analysis.checks.map((c) => `  ${checkLabel(c)}: ${c.phase}, ${checkCounts(c)}`),
    );
  }
  if (history) lines.push("over time:", ...chartLines(history));
  const conditions = planned.conditions.filter((c) => c.status === "True");
  lines.push(
    "conditions: " +
      (conditions.length === 0
        ? "none"
        : conditions.map((c) => `${c.type}${c.reason ? ` (${c.reason})` : ""}`).join(", ")),
  );
  for (const c of conditions.filter((c) => c.message)) lines.push(`  ${c.type}: ${c.message}`);
  if (planned.awaited.length > 0) {
    lines.push(`waiting for ${planned.awaited.length}:`);
    for (const a of planned.awaited.slice(0, maxWaitingShown)) {
      lines.push(`  ${a.what} — ${a.why}${a.until ? ` (until ${a.until})` : ""}`);
    }
    if (planned.awaited.length > maxWaitingShown) {
      lines.push(`  … and ${planned.awaited.length - maxWaitingShown} more`);
    }
  }
  if (planned.actions.length > 0) {
    lines.push(`next reconcile would take ${planned.actions.length} actions`);
  }
  return lines.join("\n");
}

/** The rollout plan's step and each domain's state and counts (ADR 0050). */
function planLines(plan: RolloutPlanStatus): string[] {
  const width = Math.max(...plan.domains.map((d) => d.name.length));
  const stateWidth = Math.max(...plan.domains.map((d) => d.state.length));
  return [
    `plan: ${planHeadline(plan)}`,
    ...plan.domains.map((d) =>
      `  ${d.name.padEnd(width)}  ${d.state.padEnd(stateWidth)}  ${d.updated}/${d.nodes} updated` +
      (d.unreachable > 0 ? `, ${d.unreachable} unreachable` : "")
    ),
  ];
}

/** The maintenance windows the outdated nodes wait for, group by group (ADR 0054). */
function maintenanceLines(windows: MaintenanceStatus): string[] {
  const width = Math.max(...windows.groups.map((g) => groupLabel(g).length));
  return [
    `maintenance: ${windowsHeadline(windows)}`,
    ...windows.groups.map((g) =>
      `  ${groupLabel(g).padEnd(width)}  ${g.state.padEnd(10)}  ${
        plural(g.outdated, "node")
      } outdated  ${g.problem ?? groupTimes(g).join(", ")}`
    ),
    ...(windows.moreGroups ? [`  … and ${windows.moreGroups} more groups`] : []),
  ];
}

export function isComplete(planned: Plan): boolean {
  return planned.conditions.some((c) => c.type === "Complete" && c.status === "True");
}

/** The names kubectl users give each kind, beside the resource's own. */
const kindAliases = new Map<string, SetKind>([
  ["ads", "advanceddaemonsets"],
  ["advanceddaemonset", "advanceddaemonsets"],
  ["advanceddaemonsets.apps.edgeroll.dev", "advanceddaemonsets"],
  ["ds", "daemonsets"],
  ["daemonset", "daemonsets"],
  ["daemonsets.apps", "daemonsets"],
  ["daemon", kruiseSetKind], // Kruise's CRD's short name ("ads", its other one, is edgeroll's)
  ["daemonset.apps.kruise.io", kruiseSetKind],
]);

/** `ns/name`, or `kind/ns/name` to name the kind (as kubectl names it: `ads`, `ds`, …). */
export function parseSetArg(text: string | undefined, defaultKind: SetKind): SetRef {
  const parts = (text ?? "").split("/");
  const [named, namespace, name] = parts.length === 3 ? parts : [defaultKind, ...parts];
  const kind = setKinds.find((k) => k === named) ?? kindAliases.get(named);
  if (!kind || !namespace || !name || parts.length > 3) {
    throw new UsageError(
      `expected [KIND/]NAMESPACE/NAME with KIND one of ${
        [...setKinds, ...kindAliases.keys()].join(", ")
      }, got "${text ?? ""}"`,
    );
  }
  return { kind, namespace, name };
}

export const statusCommand: Command = {
  name: "status",
  summary: "Show a rollout: progress, budget in use, conditions, nodes waiting and why.",
  usage: "[KIND/]NAMESPACE/NAME [--watch] [--interval 2s] [--kubeconfig PATH]",
  options: {
    kubeconfig: { type: "string" },
    watch: { type: "boolean" },
    interval: { type: "string" },
  },
  help: {
    kubeconfig: kubeconfigHelp,
    watch: "redraw until the rollout is complete",
    interval: "time between redraws with --watch (default 2s)",
  },
  async run(args) {
    const ref = parseSetArg(args.positionals[0], "advanceddaemonsets");
    const interval = parseDuration(stringOption(args, "interval") ?? "2s", "interval");
    const kube = new KubeClient(clientNodeApi(loadKubeConfig(stringOption(args, "kubeconfig"))));
    // What a watch has seen, drawn under the plan: its course needs more than one look.
    const history = args.values.watch ? new RolloutHistory() : undefined;
    for (;;) {
      const snapshot = await kube.readSnapshot(ref);
      if (!snapshot) {
        console.error(`edgeroll status: ${setKey(ref)} not found`);
        return 1;
      }
      const now = Date.now();
      const planned = plan(snapshot, now);
      history?.add(now, readChart(snapshot, planned));
      const text = renderStatus(ref, snapshot, planned, history);
      // Clear the screen between redraws only when a person is watching a terminal.
      if (args.values.watch && Deno.stdout.isTerminal()) console.log("\x1b[2J\x1b[H" + text);
      else console.log(text);
      if (!args.values.watch || isComplete(planned)) return 0;
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  },
};
