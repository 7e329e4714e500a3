import { assert, assertEquals } from "@std/assert";
import fc from "fast-check";
import { instantOf, type WindowRule, windowsState, windowState } from "./maintenance-window.ts";
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

Deno.test("property: inside the window until it closes, outside it until it opens, in any zone, across DST", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...zones),
      fc.subarray([...weekdays]),
      fc.integer({ min: 0, max: 24 * 60 - 1 }),
      fc.integer({ min: 1, max: 3 * 24 * 60 }),
      // 2026, every day of it: both DST changes of every zone above.
      fc.integer({ min: at("2026-01-01T00:00:00Z"), max: at("2027-01-01T00:00:00Z") }),
      (zone, days, startMinute, minutes, now) => {
        const r = rule({ days, startMinute, minutes });
        const state = windowState(r, zone, now);
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
