/**
 * Maintenance windows as a set's author writes them (issue 39, ADR 0054): weekdays, a local start
 * and an end or a duration, an IANA time zone, blackout dates, and the cut-off before a close.
 * Here: the spec's shape and the rules that need no nodes, each problem with its field path.
 */
import { z } from "zod";
import { type FieldIssue, labelKeyIssues } from "./label-selector.ts";
import { annotationPath, readJsonAnnotation } from "./json-annotation.ts";
import { maxPlanDomains, unlabelledDomain } from "./rollout-plan.ts";

export const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
export type Weekday = typeof weekdays[number];

/** At most this many windows on a set, and blackout dates: more is a calendar, not a rule. */
export const maxWindows = 20;
export const maxBlackoutDates = 366;

/** Formatters by zone name, and the names the runtime does not know (undefined). */
const zoneFormatters = new Map<string, Intl.DateTimeFormat | undefined>();
/** Zone names are written by callers (node labels): the memo is bounded, and starts over when full. */
const maxZonesRemembered = 1000;

/**
 * The wall-clock formatter of an IANA zone (`Europe/Berlin`), or undefined when the runtime's
 * Intl data does not know it. Remembered: making one costs about half a millisecond.
 */
export function zoneFormatter(timeZone: string): Intl.DateTimeFormat | undefined {
  if (zoneFormatters.has(timeZone)) return zoneFormatters.get(timeZone);
  if (zoneFormatters.size >= maxZonesRemembered) zoneFormatters.clear();
  let formatter: Intl.DateTimeFormat | undefined;
  try {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      weekday: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
  } catch {
    formatter = undefined;
  }
  zoneFormatters.set(timeZone, formatter);
  return formatter;
}

/** Whether the runtime's Intl data knows `timeZone` (an IANA name such as `Europe/Berlin`). */
export function isTimeZone(timeZone: string): boolean {
  return zoneFormatter(timeZone) !== undefined;
}

const clockTime = /^([01]\d|2[0-3]):([0-5]\d)$/;
const durationText = /^(?:(\d{1,3})h)?(?:(\d{1,4})m)?$/;

/** Minutes after midnight of `HH:MM` (24-hour), or undefined. */
export function minuteOfDay(text: string): number | undefined {
  const m = clockTime.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/** Minutes of `4h`, `90m` or `1h30m`, or undefined. */
export function durationMinutes(text: string): number | undefined {
  const m = durationText.exec(text);
  if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

export const MaintenanceWindow = z.object({
  days: z.array(z.enum(weekdays)).max(7).default([]).describe(
    "The days it opens on (Sun … Sat, local time); every day when empty.",
  ),
  start: z.string().max(5).describe("Local time it opens at, HH:MM (24-hour)."),
  end: z.string().max(5).optional().describe(
    "Local time it closes at, HH:MM; at or before start means the next day. Or duration.",
  ),
  duration: z.string().max(10).optional().describe("How long it stays open: 4h, 90m, 1h30m."),
  timeZone: z.string().max(64).optional().describe(
    "IANA time zone of this window, for every node (default: the node's, from timeZoneLabel, " +
      "else the maintenance timeZone).",
  ),
  domains: z.array(z.string().max(63)).min(1).max(maxPlanDomains).optional().describe(
    "The rollout plan's domains this window is theirs (default: every domain).",
  ),
});
export type MaintenanceWindow = z.infer<typeof MaintenanceWindow>;

export const Maintenance = z.object({
  timeZone: z.string().max(64).default("UTC").describe(
    "IANA time zone the windows are read in, e.g. Europe/Berlin.",
  ),
  timeZoneLabel: z.string().max(317).optional().describe(
    "A node label whose value is the node's IANA time zone (a node without it uses timeZone).",
  ),
  windows: z.array(MaintenanceWindow).min(1).max(maxWindows),
  blackoutDates: z.array(z.string().max(10)).max(maxBlackoutDates).default([]).describe(
    "Local dates (YYYY-MM-DD) on which no window opens.",
  ),
  cutoffMinutes: z.number().int().min(0).max(24 * 60).default(0).describe(
    "No new replacement starts this many minutes before a window closes.",
  ),
});
export type Maintenance = z.infer<typeof Maintenance>;
export type MaintenanceInput = z.input<typeof Maintenance>;

/**
 * A group of outdated nodes that share their windows (a domain of the plan, a time zone): `Open`
 * replaces their pods, `CuttingOff` is within the cut-off before the close (pods in flight
 * finish, no new replacement starts), `Closed` waits for `opensAt`.
 */
export const WindowGroupState = z.enum(["Open", "CuttingOff", "Closed"]);
export type WindowGroupState = z.infer<typeof WindowGroupState>;

/** The most groups the status lists: those opening first; the rest are counted. */
export const maxStatusGroups = 50;

export const MaintenanceStatus = z.object({
  /** Whether some outdated node's window lets its pod be replaced now. */
  open: z.boolean(),
  /** The first opening among the closed groups. */
  nextOpening: z.string().optional(),
  /** The override lifting every window until then, and who wrote it when. */
  override: z.object({
    until: z.string(),
    by: z.string().optional(),
    at: z.string().optional(),
  }).optional(),
  groups: z.array(z.object({
    /** The plan's domain; absent without a plan. */
    domain: z.string().optional(),
    /** The zone the group's windows are read in (a node label's value, when one is set). */
    timeZone: z.string(),
    state: WindowGroupState,
    opensAt: z.string().optional(),
    closesAt: z.string().optional(),
    /** When no new replacement starts: `cutoffMinutes` before the close. */
    cutoffAt: z.string().optional(),
    /** Desired nodes of the group not on the revision yet. */
    outdated: z.number().int(),
    /** Why the group never opens: no window is its domain's, its zone is unknown. */
    problem: z.string().optional(),
  })).max(maxStatusGroups),
  /** Groups not listed. */
  moreGroups: z.number().int().optional(),
});
export type MaintenanceStatus = z.infer<typeof MaintenanceStatus>;

/** A window with its times read: minutes after midnight and a length in minutes. */
export interface ReadWindow {
  days: readonly Weekday[];
  startMinute: number;
  minutes: number;
  /** The window's own zone, when it names one: it then holds for every node. */
  timeZone?: string;
  /** The plan's domains it belongs to; every domain when absent. */
  domains?: readonly string[];
}

/** Maintenance as the engine reads it: windows in minutes, where it was written. */
export interface MaintenanceRules {
  windows: ReadWindow[];
  timeZone: string;
  timeZoneLabel?: string;
  blackoutDates: readonly string[];
  cutoffMinutes: number;
  /** Where the windows were written, for what only nodes reveal. */
  path: string;
}

/** Where an AdvancedDaemonSet's windows are written. */
export const maintenanceFieldPath = "spec.updateStrategy.rollingUpdate.maintenance";

/**
 * Where the windows of a Kruise or OpenYurt DaemonSet are written, as a plan is (ADR 0053): the
 * fields of `maintenanceFieldPath` as JSON.
 */
export const maintenanceAnnotation = "apps.edgeroll.dev/maintenance";
export const maintenanceAnnotationPath = annotationPath(maintenanceAnnotation);
/** Twenty windows and a year of blackout dates fit in a few KiB: more is not a calendar. */
const maxMaintenanceAnnotationBytes = 16 * 1024;

/** Windows read from their annotation, each problem under the annotation's path. */
export const readMaintenanceAnnotation = (annotations: Record<string, string> | undefined) =>
  readJsonAnnotation(
    annotations,
    maintenanceAnnotation,
    Maintenance,
    "maintenance windows",
    maxMaintenanceAnnotationBytes,
  );

/**
 * The emergency override: `<RFC 3339 instant>` until which the windows are lifted, written with
 * `kubectl annotate`. The Event names who wrote it (the set's managedFields).
 */
export const maintenanceOverrideAnnotation = "apps.edgeroll.dev/maintenance-override";
export const maintenanceOverridePath = annotationPath(maintenanceOverrideAnnotation);

/** The instant the override lifts windows until, or what is wrong with it; neither when absent. */
export function readMaintenanceOverride(
  annotations: Record<string, string> | undefined,
): { until?: number; issues: FieldIssue[] } {
  const value = annotations?.[maintenanceOverrideAnnotation];
  if (value === undefined) return { issues: [] };
  const until = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value)
    ? Date.parse(value)
    : NaN;
  if (Number.isNaN(until)) {
    return {
      issues: [{
        path: maintenanceOverridePath,
        message: `"${value.slice(0, 64)}" is no RFC 3339 instant (2026-11-29T18:00:00Z)`,
      }],
    };
  }
  return { until, issues: [] };
}

const isoDate = /^(\d{4})-(\d{2})-(\d{2})$/;

function isDate(text: string): boolean {
  const m = isoDate.exec(text);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === text;
}

/**
 * The windows with their times read, or what is wrong, each problem under `path`: a time that is
 * no time, neither or both of end and duration, a zone the runtime does not know, a date that is
 * no date, a window longer than a week.
 */
export function readMaintenance(
  maintenance: Maintenance,
  path: string,
): { ok: true; rules: MaintenanceRules } | { ok: false; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  if (maintenance.timeZoneLabel !== undefined) {
    issues.push(...labelKeyIssues(maintenance.timeZoneLabel, `${path}.timeZoneLabel`));
  }
  if (!isTimeZone(maintenance.timeZone)) {
    issues.push({
      path: `${path}.timeZone`,
      message: `"${maintenance.timeZone}" is no IANA time zone this runtime knows`,
    });
  }
  maintenance.blackoutDates.forEach((date, i) => {
    if (!isDate(date)) {
      issues.push({
        path: `${path}.blackoutDates[${i}]`,
        message: `"${date}" is no date (YYYY-MM-DD)`,
      });
    }
  });
  const windows: ReadWindow[] = [];
  maintenance.windows.forEach((w, i) => {
    const at = `${path}.windows[${i}]`;
    const startMinute = minuteOfDay(w.start);
    if (startMinute === undefined) {
      issues.push({ path: `${at}.start`, message: `"${w.start}" is no time (HH:MM, 24-hour)` });
    }
    if ((w.end === undefined) === (w.duration === undefined)) {
      issues.push({ path: at, message: "needs exactly one of end and duration" });
    }
    let minutes: number | undefined;
    if (w.end !== undefined) {
      const endMinute = minuteOfDay(w.end);
      if (endMinute === undefined) {
        issues.push({ path: `${at}.end`, message: `"${w.end}" is no time (HH:MM, 24-hour)` });
      } else if (startMinute !== undefined) {
        minutes = endMinute > startMinute
          ? endMinute - startMinute
          : endMinute + 1440 - startMinute;
      }
    }
    if (w.duration !== undefined) {
      minutes = durationMinutes(w.duration);
      if (minutes === undefined || minutes === 0 || minutes > 7 * 1440) {
        issues.push({
          path: `${at}.duration`,
          message: `"${w.duration}" is no duration from 1m to a week (4h, 90m, 1h30m)`,
        });
      }
    }
    if (w.timeZone !== undefined && !isTimeZone(w.timeZone)) {
      issues.push({
        path: `${at}.timeZone`,
        message: `"${w.timeZone}" is no IANA time zone this runtime knows`,
      });
    }
    if (startMinute !== undefined && minutes !== undefined && minutes > 0) {
      windows.push({
        days: w.days,
        startMinute,
        minutes,
        ...(w.timeZone !== undefined ? { timeZone: w.timeZone } : {}),
        ...(w.domains !== undefined ? { domains: w.domains } : {}),
      });
    }
  });
  if (issues.length > 0) return { ok: false, issues };
  return {
    ok: true,
    rules: {
      windows,
      timeZone: maintenance.timeZone,
      ...(maintenance.timeZoneLabel !== undefined
        ? { timeZoneLabel: maintenance.timeZoneLabel }
        : {}),
      blackoutDates: maintenance.blackoutDates,
      cutoffMinutes: maintenance.cutoffMinutes,
      path,
    },
  };
}

/** The override as read: until when, and who wrote it when (the set's managedFields). */
export interface MaintenanceOverride {
  until: number;
  /** The field manager that last wrote the annotation, and when; unknown without managedFields. */
  by?: string;
  at?: string;
}

/** What the engine reads of a set's maintenance: its windows and, when written, the override. */
export interface SetMaintenance extends MaintenanceRules {
  override?: MaintenanceOverride;
}

interface ManagedFieldsEntry {
  manager?: string;
  time?: string;
  fieldsV1?: { "f:metadata"?: { "f:annotations"?: Record<string, unknown> } };
}

/** The manager that last wrote `annotation`, and when, from the object's managedFields. */
function annotationWriter(
  metadata: { managedFields?: unknown },
  annotation: string,
): { by?: string; at?: string } {
  const entries = Array.isArray(metadata.managedFields)
    ? metadata.managedFields as ManagedFieldsEntry[]
    : [];
  const writers = entries.filter((e) =>
    e.fieldsV1?.["f:metadata"]?.["f:annotations"]?.[`f:${annotation}`] !== undefined
  ).sort((a, b) => (a.time ?? "").localeCompare(b.time ?? ""));
  const last = writers.at(-1);
  return last
    ? { ...(last.manager ? { by: last.manager } : {}), ...(last.time ? { at: last.time } : {}) }
    : {};
}

/**
 * A set's windows as written at `path` (a field, or its annotation), with their problems: those
 * of `readMaintenance`, and windows naming domains on a set without a rollout plan. The override
 * annotation is read beside them (a malformed one is a problem even without windows).
 */
export function readSetMaintenance(
  maintenance: Maintenance | undefined,
  path: string,
  hasPlan: boolean,
  metadata: { annotations?: Record<string, string>; managedFields?: unknown },
): { maintenance?: SetMaintenance; issues: FieldIssue[] } {
  const override = readMaintenanceOverride(metadata.annotations);
  if (maintenance === undefined) return { issues: override.issues };
  const read = readMaintenance(maintenance, path);
  const issues = [...override.issues, ...(read.ok ? [] : read.issues)];
  if (!hasPlan) {
    maintenance.windows.forEach((w, i) => {
      if (w.domains !== undefined) {
        issues.push({
          path: `${path}.windows[${i}].domains`,
          message: "names domains of a rollout plan, and the set has none",
        });
      }
    });
  }
  if (!read.ok || issues.length > 0) return { issues };
  return {
    issues,
    maintenance: {
      ...read.rules,
      ...(override.until !== undefined
        ? {
          override: {
            until: override.until,
            ...annotationWriter(metadata, maintenanceOverrideAnnotation),
          },
        }
        : {}),
    },
  };
}

/**
 * The group whose windows a node shares (ADR 0054): its rollout plan's domain, when the set has a
 * plan (`domainLabel`'s value, or the unlabelled nodes' domain), and its time zone (the value of
 * `timeZoneLabel` when the node has it, else the windows' `timeZone`). The engine groups nodes by
 * it; the OTA API finds a node's group in the status by it.
 */
export function windowGroupOf(
  labels: Record<string, string> | undefined,
  maintenance: Pick<MaintenanceRules, "timeZone" | "timeZoneLabel">,
  domainLabel?: string,
): { domain?: string; timeZone: string } {
  const label = maintenance.timeZoneLabel;
  const timeZone = (label !== undefined ? labels?.[label] : undefined) ?? maintenance.timeZone;
  if (domainLabel === undefined) return { timeZone };
  return { domain: labels?.[domainLabel] ?? unlabelledDomain(domainLabel), timeZone };
}

/** A group of windows as Events, awaited items and the OTA API name it: `domain d (zone)`, or the zone. */
export const windowGroupName = (g: { domain?: string; timeZone: string }) =>
  g.domain !== undefined ? `domain ${g.domain} (${g.timeZone})` : g.timeZone;
