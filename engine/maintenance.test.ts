/**
 * Maintenance windows in the plan (ADR 0054): nothing is replaced outside a node's window, pods in
 * flight at its close finish, the rollout resumes at the next opening, each domain rolls in its
 * own night, the override lifts the windows, OTA marks follow the windows, and the progress
 * deadline does not run while every window is closed.
 */
import { assert, assertEquals } from "@std/assert";
import fc from "fast-check";
import { Keys, type Node } from "../api/kube-objects.ts";
import type { MaintenanceInput } from "../api/maintenance.ts";
import type { Plan, Snapshot } from "../api/plan.ts";
import { plan } from "./plan.ts";
import { windowsState } from "./maintenance-window.ts";
import { podNodeName } from "./pod-node-state.ts";
import * as f from "./testdata/fleet.ts";

const at = (iso: string) => Date.parse(iso);
const minute = 60_000;

/** An AdvancedDaemonSet over `nodes` with `maintenance` (and more of its rolling update). */
function windowed(
  maintenance: MaintenanceInput,
  nodes: Node[],
  rollingUpdate: object = {},
  spec: object = {},
): f.Cluster {
  return f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { ...rollingUpdate, maintenance } },
      ...spec,
    }) as Snapshot["set"],
    pods: [],
    nodes,
    revisions: [],
  });
}

/** The nodes whose pod the plan deletes to update it. */
const replaced = (p: Plan) =>
  p.actions.flatMap((a) => a.type === "deletePod" && a.reason.startsWith("update") ? [a.name] : []);

/** Nodes running agent:v2, available. */
const onV2 = (c: f.Cluster) =>
  c.snapshot.pods.filter((p) =>
    p.spec.containers[0].image === "agent:v2" &&
    p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True")
  ).map((p) => podNodeName(p)).sort();

const nightly = { windows: [{ start: "01:00", end: "01:10" }] };

Deno.test("outside its window no pod is replaced; status says when it opens; the tick wakes it at the opening", () => {
  let { c, now } = f.settledThenV2(windowed(nightly, f.nodes(4)), at("2026-03-02T11:59:50Z"));
  for (let i = 0; i < 5; i++, now += 1000) {
    const p = plan(c.snapshot, now);
    assertEquals(replaced(p), []);
    c = f.kubelet(f.apply(c, p, now), now);
  }
  const p = plan(c.snapshot, now);
  assertEquals(p.status.maintenance, {
    open: false,
    nextOpening: "2026-03-03T01:00:00Z",
    groups: [{
      timeZone: "UTC",
      state: "Closed",
      opensAt: "2026-03-03T01:00:00Z",
      outdated: 4,
    }],
  });
  assertEquals(p.status.nextCheckAt, "2026-03-03T01:00:00Z");
  const progressing = p.conditions.find((x) => x.type === "Progressing");
  assertEquals(progressing?.reason, "MaintenanceWindow");
  assert(
    p.awaited.some((a) => a.what === "maintenance window of UTC" && /4 nodes wait/.test(a.why)),
  );
  // At the opening, the update starts.
  assertEquals(replaced(plan(c.snapshot, at("2026-03-03T01:00:00Z"))).length, 1);
});

Deno.test("a window closing mid-rollout: pods in flight finish, no new replacement starts, the next opening finishes it", () => {
  const nodes = f.nodes(6);
  let { c, now } = f.settledThenV2(windowed(nightly, nodes), at("2026-03-02T01:09:53Z"));
  const closesAt = at("2026-03-02T01:10:00Z");
  const events: string[] = [];
  for (; now < closesAt + 30_000; now += 1000) {
    const p = plan(c.snapshot, now);
    if (now >= closesAt) assertEquals(replaced(p), [], `nothing replaced after the close`);
    events.push(...p.events.map((e) => e.reason));
    c = f.kubelet(f.apply(c, p, now), now);
  }
  const done = onV2(c).length;
  assert(done > 0 && done < nodes.length, `${done} nodes on v2 at the close`);
  // Nothing in flight is left half done: every node runs a pod, available.
  assertEquals(c.snapshot.pods.filter((p) => p.status?.phase === "Running").length, nodes.length);
  assertEquals(events.filter((r) => r === "MaintenanceWindowClosed").length, 1);
  // The next night finishes it.
  for (now = at("2026-03-03T01:00:00Z"); onV2(c).length < nodes.length; now += 1000) {
    assert(now < at("2026-03-03T01:10:00Z"), "done within the next window");
    c = f.reconciled(c, now);
  }
});

Deno.test("a node that joins while its window is closed gets its pod at once, on the new revision", () => {
  const { c, now } = f.settledThenV2(windowed(nightly, f.nodes(3)), at("2026-03-02T11:59:50Z"));
  const joined = structuredClone(c.snapshot);
  joined.nodes.push(f.node("node-9"));
  const p = plan(joined, now);
  assertEquals(replaced(p), []);
  assertEquals(
    p.actions.flatMap((a) =>
      a.type === "createPod" ? [[a.node, a.pod.spec.containers[0].image]] : []
    ),
    [["node-9", "agent:v2"]],
  );
  // The window is closed for the three old pods, which stay as they are.
  const group = p.status.maintenance?.groups[0];
  assertEquals([group?.state, group?.outdated], ["Closed", 3]);
  const after = f.kubelet(f.apply({ snapshot: joined, serial: c.serial }, p, now), now);
  assertEquals(onV2(after), ["node-9"]);
});

Deno.test("the cut-off: no new replacement starts within cutoffMinutes of the close", () => {
  const withCutoff = { ...nightly, cutoffMinutes: 5 };
  const { c } = f.settledThenV2(windowed(withCutoff, f.nodes(3)), at("2026-03-02T00:59:00Z"));
  assertEquals(replaced(plan(c.snapshot, at("2026-03-02T01:04:59Z"))).length, 1);
  const p = plan(c.snapshot, at("2026-03-02T01:05:00Z"));
  assertEquals(replaced(p), []);
  assertEquals(p.status.maintenance?.groups[0].state, "CuttingOff");
  assertEquals(p.status.maintenance?.groups[0].cutoffAt, "2026-03-02T01:05:00Z");
  assertEquals(p.status.maintenance?.groups[0].opensAt, "2026-03-03T01:00:00Z");
});

Deno.test("three domains in three zones each roll in their own night", () => {
  const zones = { tokyo: "Asia/Tokyo", berlin: "Europe/Berlin", ny: "America/New_York" };
  const nodes = Object.entries(zones).flatMap(([site, zone]) =>
    [1, 2].map((i) => f.node(`${site}-${i}`, { labels: { site, "edgeroll.dev/time-zone": zone } }))
  );
  const maintenance = {
    timeZoneLabel: "edgeroll.dev/time-zone",
    windows: [{ start: "01:00", duration: "2h" }],
  };
  const rollout = {
    maxUnavailable: 1,
    plan: { domainLabel: "site", maxConcurrentDomains: 3, steps: [{ nodes: "100%" }] },
  };
  let { c, now } = f.settledThenV2(
    windowed(maintenance, nodes, rollout),
    at("2026-07-01T12:00:00Z"),
  );
  const replacedAt = new Map<string, number>();
  // Ten minutes apart: each of a domain's two nodes is replaced within its two-hour window.
  for (const end = now + 26 * 3600_000; now < end; now += 10 * minute) {
    const p = plan(c.snapshot, now);
    for (const name of replaced(p)) replacedAt.set(podNodeName(podNamed(c, name))!, now);
    c = f.kubelet(f.apply(c, p, now), now);
  }
  assertEquals(onV2(c).length, nodes.length);
  for (const [node, t] of replacedAt) {
    const zone = Object.entries(zones).find(([site]) => node.startsWith(site))![1];
    const local = new Date(t).toLocaleTimeString("en-GB", { timeZone: zone, hour12: false });
    assert(local >= "01:00:00" && local < "03:00:00", `${node} replaced at ${local} in ${zone}`);
  }
});

Deno.test("with maxConcurrentDomains 1 a domain whose window is closed keeps its turn: the domains roll one night after another, in the plan's order", () => {
  const zones = { tokyo: "Asia/Tokyo", berlin: "Europe/Berlin", ny: "America/New_York" };
  const nodes = Object.entries(zones).flatMap(([site, zone]) =>
    [1, 2].map((i) => f.node(`${site}-${i}`, { labels: { site, "edgeroll.dev/time-zone": zone } }))
  );
  const maintenance = {
    timeZoneLabel: "edgeroll.dev/time-zone",
    windows: [{ start: "01:00", duration: "2h" }],
  };
  const rollout = {
    maxUnavailable: 1,
    plan: { domainLabel: "site", maxConcurrentDomains: 1, steps: [{ nodes: "100%" }] },
  };
  let { c, now } = f.settledThenV2(
    windowed(maintenance, nodes, rollout),
    at("2026-07-01T12:00:00Z"),
  );
  // The plan's order is by name: berlin (its night at 23:00 UTC), ny (05:00), tokyo (16:00).
  const order = ["berlin", "ny", "tokyo"];
  const first = plan(c.snapshot, now);
  assertEquals(
    first.status.plan?.domains.map((d) => [d.name, d.state]),
    [["berlin", "Rolling"], ["ny", "Pending"], ["tokyo", "Pending"]],
  );
  for (const end = now + 30 * 3600_000; now < end; now += 10 * minute) {
    const p = plan(c.snapshot, now);
    const updated = onV2(c);
    for (const name of replaced(p)) {
      const node = podNodeName(podNamed(c, name))!;
      // Tokyo's night comes first, and passes: berlin holds the turn though its window is closed.
      const earlier = order.slice(0, order.indexOf(node.split("-")[0]));
      const behind = nodes.map((n) => n.metadata.name!).filter((n) =>
        earlier.includes(n.split("-")[0]) && !updated.includes(n)
      );
      assertEquals(behind, [], `${node} replaced before ${behind}`);
    }
    c = f.kubelet(f.apply(c, p, now), now);
  }
  assertEquals(onV2(c).length, nodes.length);
});

function podNamed(c: f.Cluster, name: string) {
  return c.snapshot.pods.find((p) => p.metadata.name === name)!;
}

const zones = ["UTC", "Europe/Berlin", "America/Sao_Paulo", "Asia/Kolkata", "Pacific/Chatham"];
const weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;

/** A window as the properties generate it; its blackout dates are days around the instant's. */
const generatedWindow = fc.record({
  days: fc.subarray([...weekdays]),
  startMinute: fc.integer({ min: 0, max: 24 * 60 - 1 }),
  minutes: fc.integer({ min: 1, max: 36 * 60 }),
  cutoffMinutes: fc.integer({ min: 0, max: 30 }),
  blackoutDays: fc.uniqueArray(fc.integer({ min: -1, max: 8 }), { maxLength: 3 }),
});
type GeneratedWindow = typeof generatedWindow extends fc.Arbitrary<infer W> ? W : never;
const instant2026 = fc.integer({
  min: at("2026-01-01T00:00:00Z"),
  max: at("2027-01-01T00:00:00Z"),
});

/** A generated window read at `now`: as the spec writes it, and as the engine's rule. */
function windowAt(w: GeneratedWindow, now: number) {
  const hhmm = (m: number) =>
    `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
  const blackoutDates = w.blackoutDays.map((d) =>
    new Date(now + d * 86_400_000).toISOString().slice(0, 10)
  );
  return {
    spec: { days: w.days, start: hhmm(w.startMinute), duration: `${w.minutes}m` },
    blackoutDates,
    rule: { days: w.days, startMinute: w.startMinute, minutes: w.minutes, blackoutDates },
  };
}

/**
 * Whether the window lets a replacement start at `now` in `zone`: open, before the cut-off. The
 * window's own answer (windowsState: windows longer than a day overlap the next day's), which its
 * property checks against a walk of the zone's clock.
 */
function admitsAt(w: GeneratedWindow, zone: string, now: number): boolean {
  const state = windowsState([{ ...windowAt(w, now).rule, timeZone: zone }], now);
  return state.open && now < state.closesAt - w.cutoffMinutes * minute;
}

/** `c` with its rolling update replaced by `rollingUpdate`. */
function withRollingUpdate(c: f.Cluster, rollingUpdate: object): f.Cluster {
  const s = structuredClone(c.snapshot);
  (s.set.spec as { updateStrategy: { rollingUpdate: object } }).updateStrategy.rollingUpdate =
    rollingUpdate;
  return { snapshot: s, serial: c.serial };
}

/** The image and readiness of each pod on `node`. */
const podsOn = (c: f.Cluster, node: string) =>
  c.snapshot.pods.filter((p) => podNodeName(p) === node).map((p) => [
    p.spec.containers[0].image,
    p.status?.conditions?.find((x) => x.type === "Ready")?.status,
  ]);

/** The nodes on which the plan starts replacing an old pod (placement's creations are not). */
function startedOn(p: Plan, c: f.Cluster): string[] {
  return p.actions.flatMap((a) =>
    a.type === "createPod" && a.reason.startsWith("update")
      ? [a.node]
      : (a.type === "deletePod" || a.type === "patchPod") && a.reason.startsWith("update")
      ? [podNodeName(podNamed(c, a.name))!]
      : []
  ).sort();
}

Deno.test("property: a pod is replaced only while its window is open and before the cut-off", () => {
  const settled = f.settledThenV2(windowed(nightly, f.nodes(2)), f.t0).c;
  fc.assert(
    fc.property(fc.constantFrom(...zones), generatedWindow, instant2026, (zone, w, now) => {
      const { spec, blackoutDates } = windowAt(w, now);
      const c = withRollingUpdate(settled, {
        maintenance: {
          timeZone: zone,
          windows: [spec],
          blackoutDates,
          cutoffMinutes: w.cutoffMinutes,
        },
      });
      const admits = admitsAt(w, zone, now);
      const p = plan(c.snapshot, now);
      assertEquals(replaced(p).length, admits ? 1 : 0);
      assertEquals(p.status.maintenance?.open, admits);
    }),
    { numRuns: 150 },
  );
});

Deno.test("property: three domains in three zones, each replaced only within its own window", () => {
  const sites = ["north", "east", "south"];
  const zoneLabel = "edgeroll.dev/time-zone";
  const nodes = sites.flatMap((site) =>
    [1, 2].map((i) => f.node(`${site}-${i}`, { labels: { site } }))
  );
  const settled = f.settledThenV2(windowed(nightly, nodes), f.t0).c;
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.constantFrom(...zones), { minLength: 3, maxLength: 3 }),
      // The same local hours in each zone (each domain's own night), or a window of each's own.
      fc.oneof(
        generatedWindow.map((w) => [w, w, w]),
        fc.tuple(generatedWindow, generatedWindow, generatedWindow),
      ),
      instant2026,
      (siteZones, windows, now) => {
        const zoneOf = new Map(sites.map((site, i) => [site, siteZones[i]]));
        // Blackout dates and the cut-off are the set's: the first window's, for every domain.
        const { blackoutDays, cutoffMinutes } = windows[0];
        const c = withRollingUpdate(settled, {
          maxUnavailable: "100%",
          plan: {
            domainLabel: "site",
            maxConcurrentDomains: 3,
            domainMaxUnavailable: 1,
            steps: [{ nodes: "100%" }],
          },
          maintenance: {
            timeZoneLabel: zoneLabel,
            windows: windows.map((w, i) => ({ ...windowAt(w, now).spec, domains: [sites[i]] })),
            blackoutDates: windowAt(windows[0], now).blackoutDates,
            cutoffMinutes,
          },
        });
        for (const n of c.snapshot.nodes) {
          n.metadata.labels![zoneLabel] = zoneOf.get(n.metadata.labels!.site)!;
        }
        const admitting = sites.filter((site, i) =>
          admitsAt({ ...windows[i], blackoutDays, cutoffMinutes }, zoneOf.get(site)!, now)
        );
        const p = plan(c.snapshot, now);
        // One node of each domain whose window is open (domainMaxUnavailable 1), none of the others.
        assertEquals(startedOn(p, c).map((node) => node.split("-")[0]).sort(), admitting.sort());
        assertEquals(
          p.status.maintenance?.groups.map((g) => [g.domain, g.timeZone, g.state === "Open"])
            .sort(),
          sites.map((site) => [site, zoneOf.get(site), admitting.includes(site)]).sort(),
        );
      },
    ),
    { numRuns: 100 },
  );
});

Deno.test("property: pods in flight at a close finish on the new revision; none starts after it or within the cut-off", () => {
  const nodes = f.nodes(4);
  const settled = f.settledThenV2(windowed(nightly, nodes), f.t0).c;
  let runsWithPodsInFlight = 0;
  fc.assert(
    fc.property(
      fc.constantFrom(...zones),
      generatedWindow,
      instant2026,
      // How many seconds before the stop (the close less the cut-off) the rollout begins.
      fc.integer({ min: 1, max: 6 }),
      fc.constantFrom(
        { maxUnavailable: 1 },
        { maxUnavailable: 2 },
        { maxSurge: 1, maxUnavailable: 0 },
      ),
      (zone, w, now, lead, budget) => {
        const { spec, rule, blackoutDates } = windowAt(w, now);
        const rules = [{ ...rule, timeZone: zone }];
        // The window's next stretch from now, and when the one after it opens.
        const state = windowsState(rules, now);
        const stretch = state.open
          ? state
          : state.opensAt !== undefined
          ? windowsState(rules, state.opensAt)
          : undefined;
        fc.pre(stretch?.open === true);
        const stopAt = stretch.closesAt - w.cutoffMinutes * minute;
        const begin = stopAt - lead * 1000;
        fc.pre(begin >= stretch.openedAt);
        // A window open every minute of every day never closes.
        const after = windowsState(rules, stretch.closesAt);
        fc.pre(!after.open);
        const reopensAt = after.opensAt ?? Infinity;
        // A second apart up to ten seconds past the stop, then at the close itself.
        const instants = [
          ...Array.from({ length: lead + 10 }, (_, i) => begin + i * 1000),
          stretch.closesAt - 1000,
          stretch.closesAt,
        ].filter((t, i, all) => t < reopensAt && (i === 0 || t > all[i - 1]));
        let c = withRollingUpdate(settled, {
          ...budget,
          maintenance: {
            timeZone: zone,
            windows: [spec],
            blackoutDates,
            cutoffMinutes: w.cutoffMinutes,
          },
        });
        const started = new Set<string>();
        let stopped = false;
        for (const t of instants) {
          if (t >= stopAt && !stopped) {
            stopped = true;
            // Begun and not done: the node does not yet run one pod alone, of v2 and ready.
            const done = (node: string) =>
              JSON.stringify(podsOn(c, node)) === JSON.stringify([["agent:v2", "True"]]);
            if ([...started].some((node) => !done(node))) runsWithPodsInFlight++;
          }
          const p = plan(c.snapshot, t);
          const starts = startedOn(p, c);
          if (t >= stopAt) assertEquals(starts, [], `started at ${new Date(t).toISOString()}`);
          for (const node of starts) started.add(node);
          c = f.kubelet(f.apply(c, p, t), t);
        }
        assert(started.size > 0, "the rollout began before the stop");
        // Nothing half done nor rolled back: one pod a node, ready, on v2 where it began, else v1.
        for (const n of nodes) {
          const name = n.metadata.name!;
          assertEquals(
            podsOn(c, name),
            [[started.has(name) ? "agent:v2" : "agent:v1", "True"]],
            name,
          );
        }
      },
    ),
    { numRuns: 60 },
  );
  assert(runsWithPodsInFlight > 0, "some runs had pods in flight at the stop");
});

Deno.test("the override lifts every window until its instant, and an Event names who wrote it", () => {
  const { c } = f.settledThenV2(windowed(nightly, f.nodes(2)), at("2026-03-02T11:00:00Z"));
  const s = structuredClone(c.snapshot);
  s.set.metadata.annotations = {
    "apps.edgeroll.dev/maintenance-override": "2026-03-02T14:00:00Z",
  };
  (s.set.metadata as { managedFields?: unknown }).managedFields = [{
    manager: "kubectl-annotate",
    operation: "Update",
    time: "2026-03-02T11:58:00Z",
    fieldsV1: {
      "f:metadata": { "f:annotations": { "f:apps.edgeroll.dev/maintenance-override": {} } },
    },
  }];
  const p = plan(s, at("2026-03-02T12:00:00Z"));
  assertEquals(replaced(p).length, 1);
  assertEquals(p.status.maintenance?.override, {
    until: "2026-03-02T14:00:00Z",
    by: "kubectl-annotate",
    at: "2026-03-02T11:58:00Z",
  });
  assertEquals(
    p.events.find((e) => e.reason === "MaintenanceOverridden")?.message,
    "maintenance windows lifted until 2026-03-02T14:00:00Z by kubectl-annotate at 2026-03-02T11:58:00Z",
  );
  // Past its instant the windows hold again.
  assertEquals(replaced(plan(s, at("2026-03-02T14:00:00Z"))), []);
});

Deno.test("the progress deadline does not run while every window is closed, and runs from the opening", () => {
  const { c } = f.settledThenV2(
    windowed(nightly, f.nodes(2), {}, { progressDeadlineSeconds: 60 }),
    at("2026-03-02T11:00:00Z"),
  );
  let cluster = f.apply(
    c,
    plan(c.snapshot, at("2026-03-02T11:00:00Z")),
    at("2026-03-02T11:00:00Z"),
  );
  const later = plan(cluster.snapshot, at("2026-03-02T23:00:00Z"));
  assertEquals(later.conditions.find((x) => x.type === "Progressing")?.reason, "MaintenanceWindow");
  cluster = f.apply(cluster, later, at("2026-03-02T23:00:00Z"));
  // At the opening the deadline counts from it: not exceeded at once.
  const opened = plan(cluster.snapshot, at("2026-03-03T01:00:30Z"));
  assert(opened.conditions.every((x) => x.reason !== "ProgressDeadlineExceeded"));
  assertEquals(replaced(opened).length, 1);
});

Deno.test("OTA: pods are marked only while their node's window is open; a mark is taken back at the close", () => {
  const annotated = (cl: f.Cluster) => {
    const s = structuredClone(cl.snapshot);
    s.set.metadata.annotations = {
      ...s.set.metadata.annotations,
      "apps.edgeroll.dev/maintenance": JSON.stringify(nightly),
    };
    return { snapshot: s, serial: cl.serial };
  };
  const c = annotated(f.yurtCluster("OTA", f.nodes(3)));
  const marks = (p: Plan, status: "True" | "False") =>
    p.actions.filter((a) =>
      a.type === "setPodCondition" && a.condition.type === Keys.podNeedUpgrade &&
      a.condition.status === status
    ).length;
  // Outside the window: no mark, but each node is told the revision it waits for (to stage it).
  const outside = plan(c.snapshot, at("2026-03-02T12:00:00Z"));
  assertEquals(marks(outside, "True"), 0);
  const told = outside.actions.flatMap((a) =>
    a.type === "setPodCondition" && a.condition.type === Keys.podNeedUpgrade ? [a.condition] : []
  );
  assertEquals(told.length, 3);
  for (const condition of told) {
    assertEquals([condition.status, condition.reason], ["False", "OutsideMaintenanceWindow"]);
    assertEquals(condition.message, `controllerrevision: ${outside.status.daemonSetHash}`);
  }
  // Told once: the next plan, on the pods as written, writes nothing.
  const toldApplied = f.apply(c, outside, at("2026-03-02T12:00:00Z"));
  assertEquals(plan(toldApplied.snapshot, at("2026-03-02T12:00:10Z")).actions, []);
  const inWindow = plan(c.snapshot, at("2026-03-02T01:05:00Z"));
  assertEquals(marks(inWindow, "True"), 3);
  const marked = f.apply(c, inWindow, at("2026-03-02T01:05:00Z"));
  const afterClose = plan(marked.snapshot, at("2026-03-02T01:10:00Z"));
  assertEquals(marks(afterClose, "False"), 3);
  assert(
    afterClose.actions.every((a) =>
      a.type !== "setPodCondition" || a.reason === "the node's maintenance window is closed"
    ),
  );
});

Deno.test("a bad window is InvalidSpec with its field path, and nothing is touched", () => {
  const bad = {
    timeZone: "Mars/Olympus_Mons",
    windows: [{ start: "01:00", end: "01:10", domains: ["a"] }, { start: "01:00", duration: "0m" }],
  };
  const { c, now } = f.settledThenV2(windowed(nightly, f.nodes(2)), f.t0);
  const p = plan(withRollingUpdate(c, { maintenance: bad }).snapshot, now);
  assertEquals(p.actions, []);
  const invalid = p.conditions.find((x) => x.type === "InvalidSpec");
  assertEquals(invalid?.status, "True");
  for (
    const path of [
      "spec.updateStrategy.rollingUpdate.maintenance.timeZone",
      "spec.updateStrategy.rollingUpdate.maintenance.windows[0].domains",
      "spec.updateStrategy.rollingUpdate.maintenance.windows[1].duration",
    ]
  ) assert(invalid?.message?.includes(path), `${invalid?.message} names ${path}`);
});

Deno.test("a day that is no day in the annotation of a Kruise or OpenYurt set is InvalidSpec naming its field path", () => {
  const annotation = "apps.edgeroll.dev/maintenance";
  const windows = { windows: [{ days: ["Mon", "Funday"], start: "01:00", end: "02:00" }] };
  const kruise = {
    ...f.advancedDaemonSet({ updateStrategy: { type: "RollingUpdate" } }),
    apiVersion: "apps.kruise.io/v1beta1",
    kind: "DaemonSet",
  };
  for (
    const s of [
      f.yurtCluster("AdvancedRollingUpdate", f.nodes(2)).snapshot,
      { kind: "KruiseDaemonSet", set: kruise, pods: [], nodes: f.nodes(2), revisions: [] },
    ] as Snapshot[]
  ) {
    s.set.metadata.annotations = {
      ...s.set.metadata.annotations,
      [annotation]: JSON.stringify(windows),
    };
    const p = plan(s, at("2026-03-02T01:30:00Z"));
    const invalid = p.conditions.find((x) => x.type === "InvalidSpec");
    assertEquals(invalid?.status, "True", s.kind);
    const path = `metadata.annotations[${annotation}].windows[0].days[1]`;
    assert(invalid?.message?.includes(path), `${s.kind}: ${invalid?.message} names ${path}`);
    assertEquals(p.actions.filter((a) => a.type !== "createRevision"), [], s.kind);
  }
});

Deno.test("pre-download pulls first for the nodes whose window opens first, parallelism at a time", () => {
  const zoneLabel = "edgeroll.dev/time-zone";
  // Kruise's order (names descending) would take the west first; its window opens 13 hours later.
  const nodes = [
    ...[0, 1, 2].map((i) => f.node(`east-${i}`, { labels: { [zoneLabel]: "Asia/Tokyo" } })),
    ...[0, 1, 2].map((i) => f.node(`west-${i}`, { labels: { [zoneLabel]: "America/New_York" } })),
  ];
  const maintenance = { timeZoneLabel: zoneLabel, windows: [{ start: "01:00", end: "02:00" }] };
  const { c } = f.settledThenV2(
    windowed(maintenance, nodes, { maxUnavailable: 1 }),
    at("2026-07-01T12:00:00Z"),
  );
  const pulledFirst = (parallelism: number) => {
    const s = structuredClone(c.snapshot);
    s.set.metadata.annotations = {
      "apps.kruise.io/image-predownload-parallelism": String(parallelism),
    };
    const p = plan(s, at("2026-07-01T12:00:10Z"));
    assertEquals(replaced(p), []);
    assertEquals(p.status.maintenance?.nextOpening, "2026-07-01T16:00:00Z");
    return p.actions.flatMap((a) => a.type === "createJob" ? [a.node] : []);
  };
  assertEquals(pulledFirst(2), ["east-2", "east-1"]);
  assertEquals(pulledFirst(4), ["east-2", "east-1", "east-0", "west-2"]);
});

Deno.test("OTA with a plan: at the opening the plan's first node is marked, the others' window reason is taken back", () => {
  const nodes = ["a-1", "b-1", "c-1"].map((name) =>
    f.node(name, { labels: { "topology.kubernetes.io/zone": name[0] } })
  );
  const yurt = f.yurtCluster("OTA", nodes);
  const s = structuredClone(yurt.snapshot);
  s.set.metadata.annotations = {
    ...s.set.metadata.annotations,
    "apps.edgeroll.dev/maintenance": JSON.stringify(nightly),
    "apps.edgeroll.dev/rollout-plan": JSON.stringify({
      domainLabel: "topology.kubernetes.io/zone",
      steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
    }),
  };
  const outside = plan(s, at("2026-03-02T12:00:00Z"));
  const told = f.apply({ snapshot: s, serial: yurt.serial }, outside, at("2026-03-02T12:00:00Z"));
  const opening = plan(told.snapshot, at("2026-03-03T01:00:30Z"));
  const written = opening.actions.flatMap((a) =>
    a.type === "setPodCondition" && a.condition.type === Keys.podNeedUpgrade
      ? [[a.name.replace(/^nginx-/, "").slice(0, 3), a.condition.status, a.condition.reason]]
      : []
  ).sort();
  assertEquals(written, [["a-1", "True", ""], ["b-1", "False", ""], ["c-1", "False", ""]]);
});
