/**
 * The maintenance phase (ADR 0054): whether a node's pod may be replaced now, by its window. The
 * desired nodes with an old pod are grouped by what decides their windows (the plan's domain, the
 * node's time zone) and each group's state is worked out once: `Open` replaces, `CuttingOff` (the
 * last `cutoffMinutes` before the close) and `Closed` start nothing new, while pods in flight
 * finish. The override lifts every window until its instant. Placement is not maintenance: a new
 * node gets its pod whatever its window. Pure: the instant is an input.
 */
import type { Pod } from "../api/kube-objects.ts";
import {
  isTimeZone,
  type MaintenanceStatus,
  maxStatusGroups,
  type SetMaintenance,
  windowGroupName,
  windowGroupOf,
  type WindowGroupState,
} from "../api/maintenance.ts";
import type { Awaited, EpochMillis, PlanEvent } from "../api/plan.ts";
import { plural } from "./conditions.ts";
import { windowsState, type WindowState, type ZonedRule } from "./maintenance-window.ts";
import { activePods, type NodeView } from "./node-view.ts";
import { formatTime, parseTime, podRevision } from "./pod-node-state.ts";

export interface MaintenanceInput {
  maintenance: SetMaintenance;
  hash: string;
  /** The label whose values are the rollout plan's domains, when the set has a plan. */
  domainLabel?: string;
  previous?: MaintenanceStatus;
  now: EpochMillis;
}

export interface MaintenanceProgress {
  /** Whether a replacement may start on the node now (its window open, or the override). */
  admits(view: NodeView): boolean;
  /** When the node's window next lets a replacement start: now when it does, Infinity if never. */
  admitsFrom(view: NodeView): EpochMillis;
  /** Written while some node runs an old revision. */
  status?: MaintenanceStatus;
  /**
   * Whether the progress deadline's clock is held (no outdated node may be replaced now), and the
   * instant it runs from when it is not: the earliest opening of the groups open now.
   */
  deadline: { held: boolean; since?: EpochMillis };
  awaited: Awaited[];
  wakeUps: EpochMillis[];
  events: PlanEvent[];
}

/** A group of nodes that share their windows, and their state now. */
interface Group {
  domain?: string;
  timeZone: string;
  state: WindowGroupState;
  openedAt?: EpochMillis;
  opensAt?: EpochMillis;
  closesAt?: EpochMillis;
  cutoffAt?: EpochMillis;
  problem?: string;
  outdated: number;
}

const minuteMs = 60_000;

/** Whether the node runs an old revision that an update would replace. */
function isOutdated(view: NodeView, hash: string): boolean {
  if (view.pendingCreate) return false;
  const active = activePods(view);
  return active.some((p: Pod) => podRevision(p) !== hash) &&
    !active.some((p) => podRevision(p) === hash);
}

export function planMaintenance(
  input: MaintenanceInput,
  desired: readonly NodeView[],
): MaintenanceProgress {
  const { maintenance, hash, now, domainLabel } = input;
  const overrideUntil = maintenance.override?.until;
  const overridden = overrideUntil !== undefined && overrideUntil > now;
  const groups = new Map<string, Group>();
  const groupOfNode = new Map<string, Group>();
  // The domains no window names have the same windows: their state is worked out once a zone.
  const states = new Map<string, Omit<Group, "domain" | "outdated">>();
  for (const view of desired) {
    const { domain, timeZone } = windowGroupOf(view.node.metadata.labels, maintenance, domainLabel);
    const key = `${domain ?? ""}\u0000${timeZone}`;
    let group = groups.get(key);
    if (!group) {
      const named = domain !== undefined &&
        maintenance.windows.some((w) => w.domains?.includes(domain));
      const stateKey = `${named ? domain : ""}\u0000${timeZone}`;
      let state = states.get(stateKey);
      if (!state) {
        state = groupState(maintenance, domain, timeZone, now);
        states.set(stateKey, state);
      }
      group = { ...state, ...(domain !== undefined ? { domain } : {}), outdated: 0 };
      groups.set(key, group);
    }
    groupOfNode.set(view.name, group);
    if (isOutdated(view, hash)) group.outdated++;
  }
  const waiting = [...groups.values()].filter((g) => g.outdated > 0);
  const admitsFrom = (view: NodeView) => {
    if (overridden) return now;
    const group = groupOfNode.get(view.name);
    if (!group || group.state === "Open") return now;
    return group.opensAt ?? Infinity;
  };
  const admits = (view: NodeView) => admitsFrom(view) <= now;
  if (waiting.length === 0) {
    return { admits, admitsFrom, deadline: { held: false }, awaited: [], wakeUps: [], events: [] };
  }
  waiting.sort(byOpening);
  const open = overridden || waiting.some((g) => g.state === "Open");
  const openings = waiting.flatMap((g) => g.state !== "Open" && g.opensAt ? [g.opensAt] : []);
  const nextOpening = openings.length > 0 ? Math.min(...openings) : undefined;
  const openedAts = waiting.flatMap((g) => g.state === "Open" ? [g.openedAt!] : []);
  const overrideSince = parseTime(maintenance.override?.at);
  const status: MaintenanceStatus = {
    open,
    ...(nextOpening !== undefined ? { nextOpening: formatTime(nextOpening) } : {}),
    ...(overridden
      ? {
        override: {
          until: formatTime(overrideUntil),
          ...(maintenance.override?.by ? { by: maintenance.override.by } : {}),
          ...(maintenance.override?.at ? { at: maintenance.override.at } : {}),
        },
      }
      : {}),
    groups: waiting.slice(0, maxStatusGroups).map(groupStatus),
    ...(waiting.length > maxStatusGroups ? { moreGroups: waiting.length - maxStatusGroups } : {}),
  };
  return {
    admits,
    admitsFrom,
    status,
    deadline: {
      held: !open,
      ...(overridden && overrideSince !== undefined
        ? { since: overrideSince }
        : openedAts.length > 0
        ? { since: Math.min(...openedAts) }
        : {}),
    },
    awaited: overridden ? [] : waiting.filter((g) => g.state !== "Open").map((g) => ({
      what: `maintenance window of ${windowGroupName(g)}`,
      why: waitText(g, maintenance.cutoffMinutes),
    })),
    wakeUps: [
      ...(overridden ? [overrideUntil] : []),
      ...waiting.flatMap((g) => [g.cutoffAt, g.closesAt, g.opensAt]).filter((t): t is number =>
        t !== undefined && t > now
      ),
    ],
    events: transitions(input, status, waiting, overridden),
  };
}

/** The state of the windows of `domain`'s nodes in `timeZone` at `now`. */
function groupState(
  maintenance: SetMaintenance,
  domain: string | undefined,
  timeZone: string,
  now: EpochMillis,
): Omit<Group, "domain" | "outdated"> {
  const group = { timeZone };
  const closed = (problem: string) => ({ ...group, state: "Closed" as const, problem });
  if (!isTimeZone(timeZone)) {
    return closed(
      `its nodes' ${maintenance.timeZoneLabel} "${timeZone}" is no IANA time zone this runtime knows`,
    );
  }
  const rules: ZonedRule[] = maintenance.windows
    .filter((w) => !w.domains || (domain !== undefined && w.domains.includes(domain)))
    .map((w) => ({
      days: w.days,
      startMinute: w.startMinute,
      minutes: w.minutes,
      blackoutDates: maintenance.blackoutDates,
      timeZone: w.timeZone ?? timeZone,
    }));
  if (rules.length === 0) return closed("no window names its domain");
  const state: WindowState = windowsState(rules, now);
  if (!state.open) {
    return state.opensAt !== undefined
      ? { ...group, state: "Closed", opensAt: state.opensAt }
      : closed("every day a window could open on within a year is a blackout date");
  }
  const cutoffAt = state.closesAt - maintenance.cutoffMinutes * minuteMs;
  const after = windowsState(rules, state.closesAt);
  return {
    ...group,
    state: now < cutoffAt ? "Open" : "CuttingOff",
    openedAt: state.openedAt,
    closesAt: state.closesAt,
    ...(maintenance.cutoffMinutes > 0 ? { cutoffAt } : {}),
    ...(!after.open && after.opensAt !== undefined ? { opensAt: after.opensAt } : {}),
  };
}

/** Open groups first, then by their next opening, then by name. */
function byOpening(a: Group, b: Group): number {
  const rank = (g: Group) => g.state === "Open" ? -Infinity : g.opensAt ?? Infinity;
  return rank(a) - rank(b) || windowGroupName(a).localeCompare(windowGroupName(b));
}

function groupStatus(g: Group): MaintenanceStatus["groups"][number] {
  const time = (t: EpochMillis | undefined) => t !== undefined ? formatTime(t) : undefined;
  const fields = {
    domain: g.domain,
    opensAt: time(g.opensAt),
    closesAt: time(g.closesAt),
    cutoffAt: time(g.cutoffAt),
    problem: g.problem,
  };
  return {
    timeZone: g.timeZone,
    state: g.state,
    outdated: g.outdated,
    ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
  };
}

/** Why a group's outdated nodes wait. */
function waitText(g: Group, cutoffMinutes: number): string {
  const nodes = plural(g.outdated, "node");
  if (g.problem) return `${nodes} wait: ${g.problem}`;
  const opens = g.opensAt !== undefined ? formatTime(g.opensAt) : "no known time";
  if (g.state === "CuttingOff") {
    return `${nodes} wait: within the ${cutoffMinutes}-minute cut-off before the close at ${
      formatTime(g.closesAt!)
    }; it opens again at ${opens}`;
  }
  return `${nodes} wait: closed until ${opens}`;
}

/**
 * The Events of a change since the last status: a window that stopped the rollout at its close
 * (or its cut-off), one that opened on nodes waiting for it, an override written.
 */
function transitions(
  input: MaintenanceInput,
  status: MaintenanceStatus,
  waiting: readonly Group[],
  overridden: boolean,
): PlanEvent[] {
  const { previous, maintenance } = input;
  const events: PlanEvent[] = [];
  const override = status.override;
  if (overridden && override && previous?.override?.until !== override.until) {
    events.push({
      type: "Warning",
      reason: "MaintenanceOverridden",
      message: `maintenance windows lifted until ${override.until} by ${
        override.by ?? "a writer the set's managedFields do not name"
      }${override.at ? ` at ${override.at}` : ""}`,
    });
  }
  if (!previous) return events;
  const before = new Map(previous.groups.map((g) => [windowGroupName(g), g.state]));
  for (const g of waiting) {
    const was = before.get(windowGroupName(g));
    if (was === "Open" && g.state !== "Open" && !overridden) {
      events.push({
        type: "Normal",
        reason: "MaintenanceWindowClosed",
        message: `${windowGroupName(g)}: ${
          waitText(g, maintenance.cutoffMinutes)
        }; pods in flight finish`,
      });
    } else if (was !== undefined && was !== "Open" && g.state === "Open") {
      events.push({
        type: "Normal",
        reason: "MaintenanceWindowOpened",
        message: `${windowGroupName(g)}: open until ${formatTime(g.closesAt!)}; ${
          plural(g.outdated, "node")
        } on an old revision may be replaced`,
      });
    }
  }
  return events;
}
