/**
 * Windows in a zone's own time (engine/maintenance-window.ts): examples, and a property checked
 * against an oracle that walks the zone's clock minute by minute where it changes.
 */
import { assert, assertEquals } from "@std/assert";
import fc from "fast-check";
import {
  instantOf,
  type WindowRule,
  windowsState,
  type WindowState,
  windowState,
} from "./maintenance-window.ts";
import { isTimeZone, type Weekday, weekdays } from "../api/maintenance.ts";

const at = (iso: string) => Date.parse(iso);
const rule = (
  r: Partial<WindowRule> & Pick<WindowRule, "startMinute" | "minutes">,
): WindowRule => ({
  days: [],
  blackoutDates: [],
  ...r,
});
const day = (year: number, month: number, d: number, weekday: Weekday) => ({
  year,
  month,
  day: d,
  weekday,
});

Deno.test("a weeknight window in Berlin: open inside, closed outside, until and from the right instants", () => {
  const nights = rule({ days: ["Mon", "Tue", "Wed", "Thu", "Fri"], startMinute: 60, minutes: 240 });
  // Wednesday 2026-07-15, 03:00 CEST (UTC+2).
  assertEquals(windowState(nights, "Europe/Berlin", at("2026-07-15T01:00:00Z")), {
    open: true,
    openedAt: at("2026-07-14T23:00:00Z"),
    closesAt: at("2026-07-15T03:00:00Z"),
  });
  // Friday 06:00 local: the next opening is Monday 01:00.
  assertEquals(windowState(nights, "Europe/Berlin", at("2026-07-17T04:00:00Z")), {
    open: false,
    opensAt: at("2026-07-19T23:00:00Z"),
  });
});

Deno.test("a window past midnight belongs to the day it opened on", () => {
  const late = rule({ days: ["Sat"], startMinute: 22 * 60, minutes: 360 });
  // Sunday 01:00 in New York (EDT, UTC-4), the window opened Saturday 22:00.
  assertEquals(windowState(late, "America/New_York", at("2026-07-19T05:00:00Z")), {
    open: true,
    openedAt: at("2026-07-19T02:00:00Z"),
    closesAt: at("2026-07-19T08:00:00Z"),
  });
});

Deno.test("daylight saving: a start the clocks skip opens after the gap, one they pass twice opens the first time", () => {
  // Berlin 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z; 02:30 never happens.
  assertEquals(
    instantOf(day(2026, 3, 29, "Sun"), 150, "Europe/Berlin"),
    at("2026-03-29T01:00:00Z"),
  );
  // Anywhere in the gap, not only at its middle: the instant the clocks jump, to the millisecond.
  for (const minute of [121, 130, 170, 179]) {
    assertEquals(
      instantOf(day(2026, 3, 29, "Sun"), minute, "Europe/Berlin"),
      at("2026-03-29T01:00:00Z"),
      `${minute} minutes after midnight`,
    );
  }
  // Berlin 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z; 02:30 happens at 00:30Z and 01:30Z.
  assertEquals(
    instantOf(day(2026, 10, 25, "Sun"), 150, "Europe/Berlin"),
    at("2026-10-25T00:30:00Z"),
  );
  // A two-hour window from 01:00 on the short night lasts two hours of real time.
  const night = rule({ startMinute: 60, minutes: 120 });
  assertEquals(windowState(night, "Europe/Berlin", at("2026-03-29T00:30:00Z")), {
    open: true,
    openedAt: at("2026-03-29T00:00:00Z"),
    closesAt: at("2026-03-29T02:00:00Z"),
  });
  // Lord Howe Island moves its clocks by half an hour.
  assertEquals(
    instantOf(day(2026, 10, 4, "Sun"), 135, "Australia/Lord_Howe"),
    at("2026-10-03T15:30:00Z"),
  );
});

Deno.test("a blackout date opens no window: the next opening is the day after", () => {
  const nightly = rule({ startMinute: 60, minutes: 60, blackoutDates: ["2026-12-24"] });
  assertEquals(windowState(nightly, "UTC", at("2026-12-23T05:00:00Z")), {
    open: false,
    opensAt: at("2026-12-25T01:00:00Z"),
  });
  const never = rule({ days: ["Mon"], startMinute: 0, minutes: 60, blackoutDates: [] });
  const everyMonday = Array.from({ length: 60 }, (_, i) => {
    const d = new Date(at("2026-01-05T00:00:00Z") + i * 7 * 86_400_000);
    return d.toISOString().slice(0, 10);
  });
  assertEquals(
    windowState({ ...never, blackoutDates: everyMonday }, "UTC", at("2026-01-01T00:00:00Z")),
    { open: false },
  );
});

Deno.test("windows that touch are one stretch; the earliest of several openings is next", () => {
  const first = rule({ startMinute: 60, minutes: 60 });
  const second = rule({ startMinute: 120, minutes: 60 });
  const utc = (r: WindowRule) => ({ ...r, timeZone: "UTC" });
  assertEquals(windowsState([first, second].map(utc), at("2026-05-01T01:30:00Z")), {
    open: true,
    openedAt: at("2026-05-01T01:00:00Z"),
    closesAt: at("2026-05-01T03:00:00Z"),
  });
  assertEquals(windowsState([second, first].map(utc), at("2026-05-01T00:00:00Z")), {
    open: false,
    opensAt: at("2026-05-01T01:00:00Z"),
  });
  assert(isTimeZone("Asia/Kolkata"));
  assert(!isTimeZone("Mars/Olympus_Mons"));
});

const zones = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "America/Sao_Paulo",
  "Asia/Kolkata",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
];

const minuteMs = 60_000;
const dayMs = 24 * 60 * minuteMs;
const year2026 = { min: at("2026-01-01T00:00:00Z"), max: at("2027-01-01T00:00:00Z") };

const testFormatters = new Map<string, Intl.DateTimeFormat>();

/**
 * A zone's wall clock at a whole minute, read by a formatter of the test's own: the local date,
 * its weekday, the minute of the day and how far the clock is ahead of UTC.
 */
function wallClockOf(zone: string) {
  const format = testFormatters.get(zone) ?? new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    weekday: "short",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  });
  testFormatters.set(zone, format);
  return (instant: number) => {
    const p = Object.fromEntries(format.formatToParts(instant).map((x) => [x.type, x.value]));
    const minute = Number(p.hour) * 60 + Number(p.minute);
    return {
      date: `${p.year}-${p.month}-${p.day}`,
      weekday: p.weekday as Weekday,
      minute,
      offset: Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), 0, minute) - instant,
    };
  };
}

/**
 * The oracle: the window's openings after `from` until `until`, found by walking the zone's clock
 * rather than computing them. A date's opening is the first instant that reads its start or later
 * on it (so after a gap, and the first of an overlap). The walk takes 30-minute steps and looks at
 * each minute of a step in which the date, the offset or "past the start on a day it opens"
 * changes: in any other step the clock runs evenly and nothing opens.
 */
function* openingsByWalk(r: WindowRule, zone: string, from: number, until: number) {
  const read = wallClockOf(zone);
  type Reading = ReturnType<typeof read>;
  const pastStart = (l: Reading) =>
    (r.days.length === 0 || r.days.includes(l.weekday)) && !r.blackoutDates.includes(l.date) &&
    l.minute >= r.startMinute;
  const opened = new Set<string>();
  let before = read(from);
  if (pastStart(before)) opened.add(before.date);
  const step = 30 * minuteMs;
  for (let a = from; a < until; a += step) {
    const after = read(a + step);
    const even = after.date === before.date && after.offset === before.offset &&
      pastStart(after) === pastStart(before);
    for (let t = a + minuteMs; !even && t <= a + step; t += minuteMs) {
      const l = read(t);
      if (pastStart(l) && !opened.has(l.date)) {
        opened.add(l.date);
        yield t;
      }
    }
    before = after;
  }
}

/** The window's state at `now` by the oracle: the first opening after `now` less its length. */
function stateByWalk(r: WindowRule, zone: string, now: number): WindowState {
  const from = Math.floor(now / minuteMs) * minuteMs - (r.minutes * minuteMs + 2 * dayMs);
  for (const opensAt of openingsByWalk(r, zone, from, now + 60 * dayMs)) {
    const closesAt = opensAt + r.minutes * minuteMs;
    if (closesAt <= now) continue;
    return opensAt <= now ? { open: true, openedAt: opensAt, closesAt } : { open: false, opensAt };
  }
  return { open: false };
}

/** The days of 2026 on which `zone`'s clocks change (none in a zone without daylight saving). */
function clockChanges(zone: string): number[] {
  const read = wallClockOf(zone);
  const changes = [];
  for (let t = year2026.min; t < year2026.max; t += dayMs) {
    if (read(t).offset !== read(t + dayMs).offset) changes.push(t);
  }
  return changes;
}

/** A zone and an instant of 2026: any, or half the time within two days of a change of its clocks. */
const zonedInstant = fc.oneof(
  ...zones.map((zone) => {
    const near = clockChanges(zone).map((c) =>
      fc.integer({ min: c - 2 * dayMs, max: c + 2 * dayMs })
    );
    return fc.record({
      zone: fc.constant(zone),
      now: near.length > 0
        ? fc.oneof(fc.integer(year2026), fc.oneof(...near))
        : fc.integer(year2026),
    });
  }),
);

/** The local date `days` after `date` (YYYY-MM-DD). */
const datePlus = (date: string, days: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * dayMs).toISOString().slice(0, 10);

Deno.test("property: inside the window until it closes, outside it until it opens, in any zone, across DST and blackout dates", () => {
  fc.assert(
    fc.property(
      zonedInstant,
      fc.subarray([...weekdays]),
      // Any minute, or one in the small hours, where clocks change.
      fc.oneof(fc.integer({ min: 0, max: 24 * 60 - 1 }), fc.integer({ min: 60, max: 4 * 60 })),
      fc.integer({ min: 1, max: 3 * 24 * 60 }),
      // Blackout dates among the local days around now: the days it could open on.
      fc.uniqueArray(fc.integer({ min: -4, max: 21 }), { maxLength: 5 }),
      ({ zone, now }, days, startMinute, minutes, blackoutDays) => {
        const today = wallClockOf(zone)(Math.floor(now / minuteMs) * minuteMs).date;
        const blackoutDates = blackoutDays.map((d) => datePlus(today, d));
        const r = rule({ days, startMinute, minutes, blackoutDates });
        const state = windowState(r, zone, now);
        assertEquals(state, stateByWalk(r, zone, now));
        if (state.open) {
          assert(state.closesAt > now);
          assert(windowState(r, zone, state.closesAt - 1000).open, "open a second before");
        } else {
          const opensAt = state.opensAt;
          if (opensAt === undefined) throw new Error("a window with days opens again");
          assert(opensAt > now);
          assert(windowState(r, zone, opensAt).open, "open at its opening");
          // Closed in between: checked at a few instants.
          for (const f of [0.25, 0.5, 0.75]) {
            const t = Math.floor(now + (opensAt - now) * f);
            const between = windowState(r, zone, t);
            assertEquals(between, { open: false, opensAt }, `at ${new Date(t).toISOString()}`);
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});
