/**
 * The dashboard at fleet size (issue 20: responsive at 5,000 nodes): a set of N nodes in Z zones
 * served by the dashboard's own app from a synthetic fleet, measured on the server (rendering the
 * page, one update's message) and in Debian's Chromium (load to the first applied update; an
 * update of a wave of tiles from the fleet's change to the page showing it). Prints a table.
 * `deno task bench:dashboard [--nodes 5000] [--zones 10] [--wave 500]`.
 */
import { parseArgs } from "node:util";
import { memoryLogger } from "../lib/log.ts";
import { createDashboardApp, updateMessage } from "../cli/dashboard/app.tsx";
import type { Fleet } from "../cli/dashboard/fleet.ts";
import { type SetView, type Tile, type TileState, tileStates } from "../cli/dashboard/tiles.ts";
import { nodeDriver } from "../tests/browser/driver.ts";
import { markdownTable } from "./markdown-table.ts";
import { median } from "./stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { nodes: { type: "string" }, zones: { type: "string" }, wave: { type: "string" } },
});
const nodes = Number(values.nodes ?? 5000);
const zones = Number(values.zones ?? 10);
const wave = Number(values.wave ?? 500);
const updates = 5;
const ref = { kind: "advanceddaemonsets" as const, namespace: "bench", name: "agent" };

/** The set with its first `done` nodes updated and the next `wave` updating. */
function viewAt(done: number): SetView {
  const state = (i: number): TileState =>
    i < done ? "updated" : i < done + wave ? "updating" : "old";
  const byZone = new Map<string, Tile[]>();
  const counts = Object.fromEntries(tileStates.map((s) => [s, 0])) as Record<TileState, number>;
  for (let i = 0; i < nodes; i++) {
    const zone = `zone-${i % zones}`;
    const s = state(i);
    counts[s]++;
    if (!byZone.has(zone)) byZone.set(zone, []);
    byZone.get(zone)!.push({ node: `edge-${i}`, state: s, title: `edge-${i} · ${s}` });
  }
  return {
    ref,
    key: "advanceddaemonsets/bench/agent",
    revision: "bench",
    desired: nodes,
    updated: counts.updated,
    available: counts.updated + counts.old,
    unavailable: counts.updating,
    budget: { rule: "maxUnavailable", limit: wave, inUse: Math.min(wave, nodes - done) },
    paused: false,
    conditions: [],
    events: [],
    groupLabel: "topology.kubernetes.io/zone",
    groups: [...byZone],
    counts,
    chart: { domains: [], counts: new Map() },
  };
}

let current = viewAt(0);
const listeners = new Set<() => void>();
const fleet: Fleet = {
  sets: () => Promise.resolve([]),
  view: () => Promise.resolve(current),
  onChange(listener) {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  close: () => Promise.resolve(),
};
const closing = new AbortController();
const app = createDashboardApp({
  fleet,
  closing: closing.signal,
  logger: memoryLogger(),
  token: "bench",
  act: () => Promise.resolve(""),
  throttleMs: 10,
  refreshMs: 600_000,
});
const path = "/sets/advanceddaemonsets/bench/agent";

const timed = async <T>(run: () => Promise<T> | T) => {
  const start = performance.now();
  const value = await run();
  return { ms: performance.now() - start, value };
};

// Server side: the page, and one wave's message.
const renders: number[] = [];
let pageBytes = 0;
for (let i = 0; i < 5; i++) {
  const { ms, value } = await timed(async () => await (await app.request(path)).text());
  renders.push(ms);
  pageBytes = new TextEncoder().encode(value).length;
}
const messages: number[] = [];
let messageBytes = 0;
for (let i = 0; i < 5; i++) {
  const { ms, value } = await timed(() => JSON.stringify(updateMessage(viewAt(0), viewAt(wave))));
  messages.push(ms);
  messageBytes = new TextEncoder().encode(value).length;
}

// In Chromium, through a real server and the page's own script.
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.fetch);
const browser = await nodeDriver("measure.mjs", [`http://127.0.0.1:${server.addr.port}${path}`]);
const latencies: number[] = [];
let loadMs = 0;
try {
  loadMs = (await browser.read()).ms as number;
  for (let i = 1; i <= updates; i++) {
    const changedAt = Date.now();
    current = viewAt(i * wave);
    listeners.forEach((l) => l());
    const shown = await browser.step("update", { node: `edge-${i * wave - 1}` });
    latencies.push((shown.at as number) - changedAt);
  }
  await browser.step("done");
} finally {
  await browser.close();
  closing.abort();
  await server.shutdown();
}

console.log(`dashboard: ${nodes} nodes in ${zones} zones, waves of ${wave} tiles (median of 5)\n`);
console.log(markdownTable(["measure", "value"], [
  ["server: render the set's page", `${median(renders).toFixed(1)} ms`],
  ["the page's HTML", `${(pageBytes / 1024).toFixed(0)} KiB`],
  [`server: one update's message (${wave} tiles changed)`, `${median(messages).toFixed(1)} ms`],
  ["that message", `${(messageBytes / 1024).toFixed(1)} KiB`],
  ["Chromium: navigation to the first update applied", `${loadMs} ms`],
  [`Chromium: fleet change to the page showing it (${wave} tiles)`, `${median(latencies)} ms`],
]));
