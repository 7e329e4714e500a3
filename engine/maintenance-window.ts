/**
 * Maintenance windows in a site's own time (issue 39): whether a window is open at an instant,
 * when it closes, and when it next opens, in an IANA time zone, across daylight-saving changes
 * and past blackout dates. Wall-clock time comes from the runtime's Intl data (no tables here);
 * the instant is an input. Pure.
 *
 * A window opens on each of its days at `start`, local time, and lasts `minutes`; one that runs
 * past midnight belongs to the day it opened on. A local start the clocks skip (the spring-forward
 * gap) opens at the first instant after the gap; one the clocks pass twice (the fall-back overlap)
 * opens at the first of the two. A blackout date is a local date on which no window opens.
 */

import { type Weekday, weekdays, zoneFormatter } from "../api/maintenance.ts";

export interface WindowRule {
  /** The days it opens on; all seven when empty. */
  days: readonly Weekday[];
  /** Minutes after local midnight it opens at. */
  startMinute: number;
  /** How long it stays open, at most a week. */
  minutes: number;
  /** Local dates (`YYYY-MM-DD`) on which it does not open. */
  blackoutDates: readonly string[];
}

/** A window's state at an instant: open since `openedAt` until `closesAt`, or closed until `opensAt`. */
export type WindowState =
  | { open: true; openedAt: number; closesAt: number }
  | { open: false; opensAt?: number };

/** A window read in one time zone. */
export interface ZonedRule extends WindowRule {
  timeZone: string;
}

const minuteMs = 60_000;
const dayMs = 24 * 60 * minuteMs;
/** How far ahead an opening is looked for: past a year of blackout dates there is none. */
const horizonDays = 400;

/** The local date of an instant in `timeZone`: its year, month (1–12), day and weekday. */
interface LocalDate {
  year: number;
  month: number;
  day: number;
  weekday: Weekday;
}

/** The formatter of `timeZone` (throws a RangeError for a zone the runtime does not know). */
function formatter(timeZone: string): Intl.DateTimeFormat {
  const f = zoneFormatter(timeZone);
  if (!f) throw new RangeError(`no IANA time zone "${timeZone}" in this runtime`);
  return f;
}

/** The wall clock of `timeZone` at `instant`. */
function wallClock(instant: number, timeZone: string) {
  const parts = Object.fromEntries(
    formatter(timeZone).formatToParts(new Date(instant)).map((p) => [p.type, p.value]),
  );
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    weekday: parts.weekday as Weekday,
    minuteOfDay: Number(parts.hour) * 60 + Number(parts.minute),
    second: Number(parts.second),
  };
}

/** How far `timeZone`'s wall clock is ahead of UTC at `instant`, in milliseconds. */
function offsetAt(instant: number, timeZone: string): number {
  const w = wallClock(instant, timeZone);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, 0, w.minuteOfDay, w.second);
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/**
 * The first instant at which `timeZone`'s wall clock reads `minute` minutes after midnight of
 * `date`, or, when the clocks skip that time, the first instant after the gap.
 */
export function instantOf(date: LocalDate, minute: number, timeZone: string): number {
  const wall = Date.UTC(date.year, date.month - 1, date.day, 0, minute);
  // Two offsets around the wall time cover every change of offset within a day of it.
  const candidates = [offsetAt(wall - dayMs, timeZone), offsetAt(wall + dayMs, timeZone)]
    .map((offset) => wall - offset)
    .filter((instant) => offsetAt(instant, timeZone) === wall - instant)
    .sort((a, b) => a - b);
  if (candidates.length > 0) return candidates[0];
  // In the gap: the wall time never happens; the clocks jump past it at the later offset's start.
  const before = wall - offsetAt(wall - dayMs, timeZone);
  const after = wall - offsetAt(wall + dayMs, timeZone);
  let low = Math.min(before, after);
  let high = Math.max(before, after);
  // On whole seconds (the clock is read to the second): the jump's own instant, not one up to a
  // second after it.
  while (high - low > 1000) {
    const mid = low + Math.floor((high - low) / 2000) * 1000;
    const w = wallClock(mid, timeZone);
    const reads = Date.UTC(w.year, w.month - 1, w.day, 0, w.minuteOfDay, w.second);
    if (reads < wall) low = mid;
    else high = mid;
  }
  return high;
}

/** The local date `days` after `date` (calendar arithmetic, no time zone involved). */
function addDays(date: LocalDate, days: number): LocalDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day) + days * dayMs);
  return {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    weekday: weekdays[d.getUTCDay()],
  };
}

const isoDate = (d: LocalDate) =>
  `${d.year}-${String(d.month).padStart(2, "0")}-${String(d.day).padStart(2, "0")}`;

/** Whether the window opens on `date`: one of its days, and no blackout date. */
function opensOn(rule: WindowRule, date: LocalDate): boolean {
  return (rule.days.length === 0 || rule.days.includes(date.weekday)) &&
    !rule.blackoutDates.includes(isoDate(date));
}

/**
 * Whether `rule` is open at `now` in `timeZone`, and until when; or when it next opens (none
 * within a year and a month: every day it could open on is blacked out).
 */
export function windowState(rule: WindowRule, timeZone: string, now: number): WindowState {
  const w = wallClock(now, timeZone);
  const today: LocalDate = { year: w.year, month: w.month, day: w.day, weekday: w.weekday };
  // A window that opened up to a week ago may still be open.
  const back = Math.ceil(rule.minutes / (24 * 60)) + 1;
  for (let offset = -back; offset <= horizonDays; offset++) {
    const date = addDays(today, offset);
    if (!opensOn(rule, date)) continue;
    const opensAt = instantOf(date, rule.startMinute, timeZone);
    const closesAt = opensAt + rule.minutes * minuteMs;
    if (closesAt <= now) continue;
    if (opensAt <= now) return { open: true, openedAt: opensAt, closesAt };
    return { open: false, opensAt };
  }
  return { open: false };
}

/**
 * Several windows, each in its own zone: open while any is, from the earliest opening of those
 * open until the last of them closes (windows that touch or overlap are one stretch); else closed
 * until the first opening.
 */
export function windowsState(rules: readonly ZonedRule[], now: number): WindowState {
  let state: WindowState = { open: false };
  for (const rule of rules) {
    const s = windowState(rule, rule.timeZone, now);
    if (s.open) {
      state = state.open
        ? {
          open: true,
          openedAt: Math.min(state.openedAt, s.openedAt),
          closesAt: Math.max(state.closesAt, s.closesAt),
        }
        : s;
    } else if (!state.open && s.opensAt !== undefined) {
      state = { open: false, opensAt: Math.min(state.opensAt ?? Infinity, s.opensAt) };
    }
  }
  // A window that opens the moment another closes extends the stretch (bounded: windows that
  // never leave a gap would extend it forever).
  for (let i = 0; i < 16 && state.open; i++) {
    const closesAt: number = state.closesAt;
    let later = closesAt;
    for (const rule of rules) {
      const next = windowState(rule, rule.timeZone, closesAt);
      if (next.open) later = Math.max(later, next.closesAt);
    }
    if (later === closesAt) break;
    state = { ...state, closesAt: later };
  }
  return state;
}
