import { assertEquals } from "@std/assert";
import {
  durationMinutes,
  Maintenance,
  maintenanceAnnotation,
  maintenanceOverrideAnnotation,
  minuteOfDay,
  readMaintenance,
  readMaintenanceAnnotation,
  readMaintenanceOverride,
} from "./maintenance.ts";
import { requestedPull } from "./image-pull.ts";
import { Keys } from "./well-known-names.ts";
import type { Pod } from "./kube-objects.ts";

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
      timeZoneLabel: "edgeroll.dev/time-zone",
      windows: [
        { days: ["Sat"], start: "22:00", end: "04:00", domains: ["shops"] },
        { start: "01:00", duration: "90m", timeZone: "Europe/Berlin" },
      ],
      cutoffMinutes: 15,
    }),
    {
      ok: true,
      rules: {
        windows: [
          { days: ["Sat"], startMinute: 1320, minutes: 360, domains: ["shops"] },
          { days: [], startMinute: 60, minutes: 90, timeZone: "Europe/Berlin" },
        ],
        timeZone: "Asia/Tokyo",
        timeZoneLabel: "edgeroll.dev/time-zone",
        blackoutDates: [],
        cutoffMinutes: 15,
        path,
      },
    },
  );
});

Deno.test("a bad window is named by its field path: no time, no zone, no date, both or neither of end and duration", () => {
  const result = read({
    timeZone: "Mars/Olympus_Mons",
    timeZoneLabel: "-bad/",
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
    `${path}.timeZoneLabel`,
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

Deno.test("an end at or before the start is the next day's (an overnight window, a whole day when equal); a duration of nothing, less or over a week is refused", () => {
  const minutesOf = (w: object) => {
    const result = read({ windows: [w] });
    return result.ok ? result.rules.windows[0].minutes : result.issues.map((i) => i.path);
  };
  assertEquals(minutesOf({ start: "22:00", end: "04:00" }), 360);
  assertEquals(minutesOf({ start: "01:00", end: "00:59" }), 1439);
  assertEquals(minutesOf({ start: "01:00", end: "01:00" }), 1440);
  assertEquals(minutesOf({ start: "01:00", duration: "168h" }), 7 * 1440);
  for (const duration of ["0m", "0h0m", "-1h", "-30m", "169h", "90"]) {
    assertEquals(
      minutesOf({ start: "01:00", duration }),
      [`${path}.windows[0].duration`],
      duration,
    );
  }
});

Deno.test("windows in an annotation are read as the field, each problem under the annotation's path", () => {
  const at = `metadata.annotations[${maintenanceAnnotation}]`;
  const windows = { windows: [{ start: "01:00", duration: "2h" }] };
  assertEquals(
    readMaintenanceAnnotation({ [maintenanceAnnotation]: JSON.stringify(windows) }).value,
    Maintenance.parse(windows),
  );
  assertEquals(readMaintenanceAnnotation({}), { issues: [] });
  const issues = (value: string) =>
    readMaintenanceAnnotation({ [maintenanceAnnotation]: value }).issues.map((i) =>
      `${i.path}: ${i.message.slice(0, 40)}`
    );
  assertEquals(issues("{windows: ["), [`${at}: must be maintenance windows as JSON: Exp`]);
  assertEquals(issues('{"windows": []}')[0]?.startsWith(`${at}.windows: `), true);
  assertEquals(issues(" ".repeat(17_000))[0], `${at}: is 17000 bytes, more than the 16384 main`);
});

Deno.test("the override is an RFC 3339 instant; anything else is named with the annotation's path", () => {
  const read = (value: string) =>
    readMaintenanceOverride({ [maintenanceOverrideAnnotation]: value });
  assertEquals(read("2026-11-29T18:00:00Z"), { until: Date.UTC(2026, 10, 29, 18), issues: [] });
  assertEquals(read("2026-11-29T19:00:00+01:00").until, Date.UTC(2026, 10, 29, 18));
  assertEquals(readMaintenanceOverride(undefined), { issues: [] });
  for (const bad of ["tomorrow", "2026-11-29", "2026-13-01T00:00:00Z"]) {
    assertEquals(read(bad).issues.map((i) => i.path), [
      `metadata.annotations[${maintenanceOverrideAnnotation}]`,
    ]);
  }
});

Deno.test("a pull asked for the revision a window holds counts as asked; one with no mark nor window does not", () => {
  const podWith = (need: { status: string; reason?: string }) =>
    ({
      metadata: { name: "p" },
      spec: { containers: [] },
      status: {
        conditions: [
          { type: "PodNeedUpgrade", message: "controllerrevision: v2", ...need },
          { type: "PodImageReady", status: "False", message: "controllerrevision: v2" },
        ],
      },
    }) as unknown as Pod;
  assertEquals(requestedPull(podWith({ status: "True" })), "v2");
  assertEquals(requestedPull(podWith({ status: "False", reason: Keys.outsideWindow })), "v2");
  assertEquals(requestedPull(podWith({ status: "False" })), undefined);
});
