/**
 * What the simulated cluster's behaviour costs at fleet scale: start of N nodes, an idle
 * fleet (Lease renewals and status posts at speed 1), a DaemonSet rolled onto every node,
 * and the idle fleet with its pods. Prints a table; never fails a build.
 *
 *   deno run -A bench/sim-behaviour.ts [nodes] [idleSeconds]
 */
import process from "node:process";
import { Store } from "../sim/store.ts";
import { startClusterBehaviour } from "../sim/cluster/mod.ts";
import { markdownTable } from "./markdown-table.ts";

export interface BehaviourRow {
  measure: string;
  value: string;
}

async function idle(store: Store, seconds: number): Promise<string> {
  const writes = store.writes;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const share = (used.user + used.system) / 1e6 / elapsed * 100;
  const rss = Deno.memoryUsage().rss / 1e6;
  return `${((store.writes - writes) / elapsed).toFixed(0)} writes/s, ${
    share.toFixed(1)
  }% of a core, RSS ${rss.toFixed(0)} MB`;
}

/**
 * Creates the DaemonSet `default/agent` running `image` and waits until each of the `nodes`
 * has its pod available, placed and started by sim's own controllers and kubelets.
 */
export async function daemonSetOnEveryNode(
  store: Store,
  nodes: number,
  image: string,
): Promise<void> {
  store.create("daemonsets.apps", {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "agent", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: {
        metadata: { labels: { app: "agent" } },
        spec: { containers: [{ name: "agent", image }] },
      },
    },
  });
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const status = store.peek("daemonsets.apps", "default", "agent")?.status as
      | { numberAvailable?: number }
      | undefined;
    if (status?.numberAvailable === nodes) return;
  }
}

export async function benchSimBehaviour(nodes = 5000, idleSeconds = 10): Promise<BehaviourRow[]> {
  const rows: BehaviourRow[] = [];
  const store = new Store();
  let started = performance.now();
  const cluster = startClusterBehaviour(store, {
    nodes,
    zones: 10,
    speed: 1,
    seed: 1,
    events: false,
  });
  try {
    rows.push({
      measure: `start ${nodes} nodes + leases`,
      value: `${(performance.now() - started).toFixed(0)} ms, ${store.writes} writes`,
    });
    rows.push({
      measure: `idle ${idleSeconds} s, speed 1, no pods`,
      value: await idle(store, idleSeconds),
    });
    // At speed 1: a higher speed multiplies the Lease writes too and would measure those.
    const writes = store.writes;
    started = performance.now();
    await daemonSetOnEveryNode(store, nodes, "nginx:1.27");
    rows.push({
      measure: `DaemonSet to ${nodes} available pods (speed 1, 8 s pulls)`,
      value: `${(performance.now() - started).toFixed(0)} ms, ${store.writes - writes} writes`,
    });
    // Each node posts its status once more with the pulled image in it (within 10 s): let
    // that pass, so the row shows the steady state (by now the watch history is full too).
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    rows.push({
      measure: `idle ${idleSeconds} s, speed 1, ${nodes} pods, full history`,
      value: await idle(store, idleSeconds),
    });
  } finally {
    cluster.stop();
  }
  return rows;
}

if (import.meta.main) {
  const nodes = Number(Deno.args[0] ?? 5000);
  const seconds = Number(Deno.args[1] ?? 10);
  const rows = await benchSimBehaviour(nodes, seconds);
  console.log(markdownTable(["sim behaviour", "result"], rows.map((r) => [r.measure, r.value])));
}
