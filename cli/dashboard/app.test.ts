import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { memoryLogger } from "../../lib/log.ts";
import type { SetRef } from "../../api/set-ref.ts";
import { createDashboardApp, type DashboardAction } from "./app.tsx";
import type { Fleet } from "./fleet.ts";
import type { SetView, TileState } from "./tiles.ts";
import { sseData } from "../../tests/sse.ts";

const ref: SetRef = { kind: "advanceddaemonsets", namespace: "edge", name: "agent" };

function viewWith(states: Record<string, TileState>): SetView {
  const tiles = Object.entries(states).map(([node, state]) => ({ node, state, title: node }));
  const counts = {
    updated: 0,
    updating: 0,
    old: 0,
    held: 0,
    unavailable: 0,
    "cut-off": 0,
    failed: 0,
  };
  for (const t of tiles) counts[t.state]++;
  return {
    ref,
    key: "advanceddaemonsets/edge/agent",
    revision: "abc",
    desired: tiles.length,
    updated: counts.updated,
    available: counts.updated + counts.old,
    unavailable: counts.unavailable,
    budget: { rule: "maxUnavailable", limit: 1, inUse: 0 },
    paused: false,
    conditions: [{ type: "Progressing", status: "True", reason: "Updating", message: "1/2" }],
    events: [{ type: "Warning", reason: "RolloutStopped", message: "pod x crashed", at: "t" }],
    groupLabel: "topology.kubernetes.io/zone",
    groups: [["zone-a", tiles]],
    counts,
    chart: { domains: [], counts: new Map() },
  };
}

/** A fleet whose one set's view the test sets, and whose changes it announces. */
function fakeFleet(initial: SetView) {
  let current = initial;
  const listeners = new Set<() => void>();
  const fleet: Fleet = {
    sets: () =>
      Promise.resolve([{
        ref,
        key: current.key,
        desired: current.desired,
        updated: current.updated,
        unavailable: current.unavailable,
        conditions: ["Progressing"],
      }]),
    view: (r) => Promise.resolve(r.name === ref.name ? current : undefined),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => Promise.resolve(),
  };
  return {
    fleet,
    change(next: SetView) {
      current = next;
      listeners.forEach((l) => l());
    },
  };
}

function dashboard(initial: SetView) {
  const fake = fakeFleet(initial);
  const acted: string[] = [];
  const app = createDashboardApp({
    fleet: fake.fleet,
    logger: memoryLogger(),
    token: "page-token",
    throttleMs: 10,
    refreshMs: 60_000,
    act: (action: DashboardAction, r: SetRef) => {
      acted.push(`${action} ${r.namespace}/${r.name}`);
      return Promise.resolve(`${r.name} ${action}d`);
    },
  });
  return { app, acted, change: fake.change };
}

Deno.test("the list page links each set; a set's page draws a tile per node in its zone, the budget, conditions and events, with no asset from elsewhere", async () => {
  const { app } = dashboard(viewWith({ "edge-1": "updated", "edge-2": "cut-off" }));
  const list = await (await app.request("/")).text();
  assertStringIncludes(list, '<a href="/sets/advanceddaemonsets/edge/agent">');
  const res = await app.request("/sets/advanceddaemonsets/edge/agent");
  assertEquals(res.status, 200);
  const page = await res.text();
  assertStringIncludes(page, "<!DOCTYPE html>");
  assertStringIncludes(page, '<span id="n-edge-1" class="tile updated" title="edge-1">');
  assertStringIncludes(page, '<span id="n-edge-2" class="tile cut-off" title="edge-2">');
  assertStringIncludes(page, "zone-a");
  assertStringIncludes(page, "budget: 0 of maxUnavailable 1 in use");
  assertStringIncludes(page, "Progressing True (Updating): 1/2");
  assertStringIncludes(page, "RolloutStopped: pod x crashed");
  assertStringIncludes(page, '<meta name="edgeroll-token" content="page-token"/>');
  // Every src and href is this app's own.
  const links = [...page.matchAll(/(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
  assertEquals(links.filter((l) => !l.startsWith("/")), []);
  for (const asset of ["/assets/dashboard.js", "/assets/dashboard.css"]) {
    assertEquals((await app.request(asset)).status, 200, asset);
  }
});

Deno.test("a set that does not exist is a 404; a name Kubernetes could not hold is a 400", async () => {
  const { app } = dashboard(viewWith({}));
  assertEquals((await app.request("/sets/advanceddaemonsets/edge/other")).status, 404);
  assertEquals((await app.request("/sets/advanceddaemonsets/Edge_1/agent")).status, 400);
  assertEquals((await app.request("/sets/replicasets/edge/agent")).status, 400);
});

Deno.test("the stream sends every tile first, then only the tiles that changed", async () => {
  const { app, change } = dashboard(viewWith({ "edge-1": "old", "edge-2": "old" }));
  const res = await app.request("/sets/advanceddaemonsets/edge/agent/stream");
  assertEquals(res.headers.get("content-type"), "text/event-stream");
  const messages = sseData<{ tiles: [string, string][]; summary: string }>(res);
  const first = await messages.next();
  assertEquals(first.value!.tiles, [["edge-1", "old"], ["edge-2", "old"]]);
  change(viewWith({ "edge-1": "updated", "edge-2": "old" }));
  const second = await messages.next();
  assertEquals(second.value!.tiles, [["edge-1", "updated"]]);
  assertStringIncludes(second.value!.summary, '<b data-field="updated">1</b>/2 updated');
  await messages.return(undefined);
});

Deno.test("an action needs the page's token and a same-origin request, then runs the CLI's", async () => {
  const { app, acted } = dashboard(viewWith({}));
  const path = "/sets/advanceddaemonsets/edge/agent/pause";
  // app.request's URLs are http://localhost/...: a page of this dashboard sends that Origin.
  const post = (headers: Record<string, string>) =>
    app.request(path, { method: "POST", headers: { origin: "http://localhost", ...headers } });
  assertEquals((await post({})).status, 403, "no token");
  assertEquals((await post({ "x-edgeroll-dashboard": "guess" })).status, 403, "wrong token");
  const elsewhere = await post({
    "x-edgeroll-dashboard": "page-token",
    origin: "http://evil.example",
  });
  assertEquals(elsewhere.status, 403, "another origin");
  assertStringIncludes((await elsewhere.json()).error.message, "not from http://evil.example");
  assertEquals(acted, []);
  const ok = await post({ "x-edgeroll-dashboard": "page-token" });
  assertEquals([ok.status, await ok.json()], [200, { message: "agent paused" }]);
  assertEquals(acted, ["pause edge/agent"]);
  assertEquals(
    (await app.request("/sets/advanceddaemonsets/edge/agent/delete", {
      method: "POST",
      headers: { "x-edgeroll-dashboard": "page-token" },
    })).status,
    400,
  );
});

/** A view of a set under a rollout plan: zone-b done, zone-a awaiting approval after a canary. */
function plannedView(): SetView {
  const view = viewWith({ "edge-1": "updated", "edge-2": "old" });
  const domain = (name: string, nodes: number) => ({ name, nodes, budget: 1 });
  return {
    ...view,
    plan: {
      revision: "abc",
      step: 1,
      steps: 2,
      target: 1,
      state: "AwaitingApproval",
      domains: [
        { name: "zone-b", state: "Done", nodes: 1, updated: 1, unreachable: 0 },
        { name: "zone-a", state: "Pending", nodes: 1, updated: 0, unreachable: 0 },
      ],
    },
    chart: {
      revision: "abc",
      domains: [domain("zone-b", 1), domain("zone-a", 1)],
      counts: new Map([
        ["zone-b", { updated: 1, unavailable: 0 }],
        ["zone-a", { updated: 0, unavailable: 0 }],
      ]),
    },
  };
}

Deno.test("a set with a plan shows its step, each domain's state and chart, and the approve, promote and abort buttons", async () => {
  const plain = await (await dashboard(viewWith({})).app.request(
    "/sets/advanceddaemonsets/edge/agent",
  )).text();
  for (const action of ["approve", "promote", "abort"]) {
    assert(!plain.includes(`/agent/${action}"`), `no ${action} button without a plan`);
  }
  const { app, acted } = dashboard(plannedView());
  const page = await (await app.request("/sets/advanceddaemonsets/edge/agent")).text();
  assertStringIncludes(page, 'data-plan-state="AwaitingApproval"');
  assertStringIncludes(page, "step 1 of 2 (1 node), AwaitingApproval");
  assertStringIncludes(page, 'data-domain="zone-b" data-domain-state="Done"');
  for (const action of ["approve", "promote", "abort"]) {
    assertStringIncludes(page, `data-action="/sets/advanceddaemonsets/edge/agent/${action}"`);
  }
  // The stream's summary draws each domain's course since the page opened.
  const res = await app.request("/sets/advanceddaemonsets/edge/agent/stream");
  const messages = sseData<{ summary: string }>(res);
  const first = await messages.next();
  assertStringIncludes(first.value!.summary, '<svg class="chart"');
  assertStringIncludes(first.value!.summary, 'aria-label="zone-b: 1/1 updated, 0 unavailable');
  await messages.return(undefined);
  const approved = await app.request("/sets/advanceddaemonsets/edge/agent/approve", {
    method: "POST",
    headers: { origin: "http://localhost", "x-edgeroll-dashboard": "page-token" },
  });
  assertEquals(approved.status, 200);
  assertEquals(acted, ["approve edge/agent"]);
});

Deno.test("a set whose rollout stopped shows its plan Stopped, why, and the domain over its budget; rolled back, where from", async () => {
  const view = plannedView();
  const stopped: SetView = {
    ...view,
    stopped: "FailureBudgetExceeded (revision abc)",
    plan: {
      ...view.plan!,
      state: "Stopped",
      stop: { reason: "FailureBudgetExceeded", domain: "zone-b" },
      domains: [{ ...view.plan!.domains[0], state: "Stopped" }, view.plan!.domains[1]],
    },
  };
  const page = await (await dashboard(stopped).app.request("/sets/advanceddaemonsets/edge/agent"))
    .text();
  assertStringIncludes(page, 'data-plan-state="Stopped"');
  assertStringIncludes(page, "step 1 of 2 (1 node), Stopped (FailureBudgetExceeded in zone-b)");
  assertStringIncludes(page, 'data-domain="zone-b" data-domain-state="Stopped"');
  // Rolled back: the plan of the revision returned to says which one it came back from.
  const back: SetView = { ...view, plan: { ...view.plan!, state: "Rolling", rollbackFrom: "def" } };
  const after = await (await dashboard(back).app.request("/sets/advanceddaemonsets/edge/agent"))
    .text();
  assertStringIncludes(after, "step 1 of 2 (1 node), Rolling, rolled back from def");
});

Deno.test("a set whose outdated nodes wait for their maintenance windows shows each group, its state and its opening", async () => {
  const view: SetView = {
    ...viewWith({ "edge-1": "old", "edge-2": "old" }),
    maintenance: {
      open: false,
      nextOpening: "2026-11-29T16:00:00Z",
      groups: [
        { timeZone: "Asia/Tokyo", state: "Closed", opensAt: "2026-11-29T16:00:00Z", outdated: 1 },
        {
          timeZone: "Mars/Olympus_Mons",
          state: "Closed",
          outdated: 1,
          problem: "its nodes' time zone is unknown",
        },
      ],
    },
  };
  const plain = await (await dashboard(viewWith({})).app.request(
    "/sets/advanceddaemonsets/edge/agent",
  )).text();
  assert(!plain.includes("Maintenance windows"), "no windows section without windows");
  const page = await (await dashboard(view).app.request("/sets/advanceddaemonsets/edge/agent"))
    .text();
  assertStringIncludes(page, 'data-windows-open="false"');
  assertStringIncludes(page, "closed, next opening 2026-11-29T16:00:00Z");
  assertStringIncludes(page, 'data-window="Asia/Tokyo" data-window-state="Closed"');
  assertStringIncludes(page, "1 node outdated, opens 2026-11-29T16:00:00Z");
  assertStringIncludes(page, "its nodes&#39; time zone is unknown");
});

Deno.test("a set with analysis checks shows each check's standing per domain, its counts and last value", async () => {
  const measurement = { at: "2026-11-29T14:10:15Z", phase: "Failed" as const, value: "0.31" };
  const view: SetView = {
    ...viewWith({ "edge-1": "updated", "edge-2": "old" }),
    analysis: {
      revision: "abc",
      checks: [
        {
          check: "error-ratio",
          domain: "zone-b",
          phase: "Failed",
          passed: 0,
          failed: 1,
          inconclusive: 0,
          measurements: [{ ...measurement, message: "0.31 fails" }],
        },
        {
          check: "error-ratio",
          domain: "zone-a",
          step: 1,
          phase: "Inconclusive",
          passed: 1,
          failed: 0,
          inconclusive: 2,
          nextAt: "2026-11-29T14:11:00Z",
          measurements: [],
        },
      ],
    },
  };
  const plain = await (await dashboard(viewWith({})).app.request(
    "/sets/advanceddaemonsets/edge/agent",
  )).text();
  assert(!plain.includes("Analysis checks"), "no checks section without checks");
  const page = await (await dashboard(view).app.request("/sets/advanceddaemonsets/edge/agent"))
    .text();
  assertStringIncludes(page, 'data-check="error-ratio in zone-b" data-check-phase="Failed"');
  assertStringIncludes(page, "0 passed, 1 failed, 0 inconclusive; last 0.31 at");
  assertStringIncludes(page, 'data-check="step 1 error-ratio in zone-a"');
  assertStringIncludes(page, "next at 2026-11-29T14:11:00Z");
});
