/**
 * Maintenance windows as a set's author writes them (issue 39, ADR 0054): weekdays, a local start
 * and an end or a duration, an IANA time zone, blackout dates, and the cut-off before a close.
 * Here: the spec's shape and the rules that need no nodes, each problem with its field path.
 */
import { z } from "zod";
import type { FieldIssue } from "./label-selector.ts";

export const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
export type Weekday = typeof weekdays[number];

/** At most this many windows on a set, and blackout dates: more is a calendar, not a rule. */
export const maxWindows = 20;
export const maxBlackoutDates = 366;

/** Whether the runtime's Intl data knows `timeZone` (an IANA name such as `Europe/Berlin`). */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
  }
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
    "IANA time zone of this window (default: the maintenance timeZone).",
  ),
});
export type MaintenanceWindow = z.infer<typeof MaintenanceWindow>;

export const Maintenance = z.object({
  timeZone: z.string().max(64).default("UTC").describe(
    "IANA time zone the windows are read in, e.g. Europe/Berlin.",
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

/** A window with its times read: minutes after midnight and a length in minutes. */
export interface ReadWindow {
  days: readonly Weekday[];
  startMinute: number;
  minutes: number;
  timeZone: string;
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
): { ok: true; windows: ReadWindow[] } | { ok: false; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
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
    const timeZone = w.timeZone ?? maintenance.timeZone;
    if (w.timeZone !== undefined && !isTimeZone(w.timeZone)) {
      issues.push({
        path: `${at}.timeZone`,
        message: `"${w.timeZone}" is no IANA time zone this runtime knows`,
      });
    }
    if (startMinute !== undefined && minutes !== undefined && minutes > 0) {
      windows.push({ days: w.days, startMinute, minutes, timeZone });
    }
  });
  return issues.length > 0 ? { ok: false, issues } : { ok: true, windows };
}
