import { assertEquals } from "@std/assert";
import { durationMinutes, Maintenance, minuteOfDay, readMaintenance } from "./maintenance.ts";

const path = "spec.updateStrategy.rollingUpdate.maintenance";
const read = (input: unknown) => readMaintenance(Maintenance.parse(input), path);

Deno.test("windows are read to minutes: end past midnight is the next day, or a duration", () => {
  assertEquals(minuteOfDay("01:30"), 90);
  assertEquals(minuteOfDay("24:00"), undefined);
  assertEquals(durationMinutes("1h30m"), 90);
  assertEquals(durationMinutes("h"), undefined);
  assertEquals(
    read({
      timeZone: "Asia/Tokyo",
      windows: [
        { days: ["Sat"], start: "22:00", end: "04:00" },
        { start: "01:00", duration: "90m", timeZone: "Europe/Berlin" },
      ],
    }),
    {
      ok: true,
      windows: [
        { days: ["Sat"], startMinute: 1320, minutes: 360, timeZone: "Asia/Tokyo" },
        { days: [], startMinute: 60, minutes: 90, timeZone: "Europe/Berlin" },
      ],
    },
  );
});

Deno.test("a bad window is named by its field path: no time, no zone, no date, both or neither of end and duration", () => {
  const result = read({
    timeZone: "Mars/Olympus_Mons",
    windows: [
      { start: "25:00", end: "01:00" },
      { start: "01:00" },
      { start: "01:00", end: "02:00", duration: "1h" },
      { start: "01:00", duration: "8d" },
      { start: "01:00", end: "1am", timeZone: "Europe/Atlantis" },
    ],
    blackoutDates: ["2026-02-30", "2026-12-24"],
  });
  assertEquals(result.ok ? [] : result.issues.map((i) => i.path), [
    `${path}.timeZone`,
    `${path}.blackoutDates[0]`,
    `${path}.windows[0].start`,
    `${path}.windows[1]`,
    `${path}.windows[2]`,
    `${path}.windows[3].duration`,
    `${path}.windows[4].end`,
    `${path}.windows[4].timeZone`,
  ]);
});
