/**
 * The simulator's API server at fleet scale: 5,000 nodes (with their heartbeats, kubelets and
 * controllers running) and a DaemonSet's 5,000 running pods, placed by sim's own controllers
 * as a user's set would be. Prints a table; targets are printed beside the numbers, never
 * asserted.
 */
import { startSim } from "../sim/start.ts";
import { markdownTable } from "./markdown-table.ts";
import { median } from "./stats.ts";
import { daemonSetOnEveryNode } from "./sim-behaviour.ts";

const NODES = 5_000;
const WATCHERS = 10;
const WATCHED_WRITES = 1_000;
const PATCHES = 1_000;
const REST_MS = 30_000;

interface Row {
  measure: string;
  value: string;
  target: string;
}

function ms(start: number): number {
  return performance.now() - start;
}

/** Reads a watch stream until `lines` events arrived; resolves with the time of the last. */
async function countLines(body: ReadableStream<Uint8Array>, lines: number): Promise<number> {
  const reader = body.getReader();
  let seen = 0;
  while (seen < lines) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const byte of value) if (byte === 10) seen++;
  }
  reader.cancel();
  return performance.now();
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  /** The highest resident size sampled while the bench runs. */
  let peakRss = 0;
  const sampler = setInterval(() => peakRss = Math.max(peakRss, Deno.memoryUsage().rss), 100);
  let start = performance.now();
  const sim = await startSim({ nodes: NODES, zones: 10 });
  rows.push({
    measure: `start with ${NODES} nodes`,
    value: `${ms(start).toFixed(0)} ms`,
    target: "-",
  });
  try {
    start = performance.now();
    await daemonSetOnEveryNode(sim.store, NODES, "registry.local/agent:1.0");
    rows.push({
      measure: `DaemonSet to ${NODES} available pods (speed 1)`,
      value: `${ms(start).toFixed(0)} ms`,
      target: "-",
    });
    // Each node posts its status once more with the pulled image in it (within 10 s): let that
    // pass, so the figures are the steady state's, with the watch history full.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const podNames = sim.store.scan("pods").map((pod) => pod.metadata.name);

    const list = async (path: string, accept = "application/json") => {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        const response = await fetch(`${sim.url}${path}`, { headers: { accept } });
        bytes = (await response.arrayBuffer()).byteLength;
        times.push(ms(t));
      }
      return { median: median(times), bytes };
    };
    const all = await list("/api/v1/pods");
    rows.push({
      measure: `list ${NODES} pods (JSON, ${(all.bytes / 1e6).toFixed(1)} MB)`,
      value: `${all.median.toFixed(0)} ms`,
      target: "< 200 ms",
    });
    const table = await list(
      "/api/v1/namespaces/default/pods",
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    );
    rows.push({
      measure: `list ${NODES} pods as Table (kubectl get)`,
      value: `${table.median.toFixed(0)} ms`,
      target: "-",
    });
    const selected = await list(`/api/v1/pods?fieldSelector=spec.nodeName%3Dedge-${NODES}`);
    rows.push({
      measure: "list with a field selector (1 match)",
      value: `${selected.median.toFixed(0)} ms`,
      target: "-",
    });
    const nodes = await list("/api/v1/nodes");
    rows.push({
      measure: `list ${NODES} nodes`,
      value: `${nodes.median.toFixed(0)} ms`,
      target: "-",
    });

    // What a controller's writes cost: sequential merge patches of pod labels over HTTP.
    start = performance.now();
    for (let i = 0; i < PATCHES; i++) {
      const response = await fetch(`${sim.url}/api/v1/namespaces/default/pods/${podNames[i]}`, {
        method: "PATCH",
        headers: { "content-type": "application/merge-patch+json" },
        body: JSON.stringify({ metadata: { labels: { patched: String(i) } } }),
      });
      await response.arrayBuffer();
    }
    const perPatch = ms(start) / PATCHES;
    rows.push({
      measure: `${PATCHES} merge patches over HTTP, one at a time`,
      value: `${perPatch.toFixed(2)} ms each`,
      target: "-",
    });

    const controllers = Array.from({ length: WATCHERS }, () => new AbortController());
    const from = sim.store.resourceVersion;
    const streams = await Promise.all(
      controllers.map((c) =>
        fetch(`${sim.url}/api/v1/namespaces/default/pods?watch=1&resourceVersion=${from}`, {
          signal: c.signal,
        })
      ),
    );
    const arrivals = streams.map((r) => countLines(r.body!, WATCHED_WRITES));
    start = performance.now();
    for (let i = 0; i < WATCHED_WRITES; i++) {
      const pod = sim.store.get("pods", "default", podNames[i]);
      pod.metadata.labels = { ...pod.metadata.labels, touched: "yes" };
      sim.store.update("pods", pod);
    }
    const last = Math.max(...await Promise.all(arrivals));
    controllers.forEach((c) => c.abort());
    rows.push({
      measure: `watch fan-out: ${WATCHED_WRITES} writes to ${WATCHERS} watchers`,
      value: `${(last - start).toFixed(0)} ms (${
        ((WATCHED_WRITES * WATCHERS) / ((last - start) / 1000)).toFixed(0)
      } events/s)`,
      target: "-",
    });
    rows.push({
      measure: "resident memory at its highest, under the load above",
      value: `${(peakRss / 2 ** 20).toFixed(0)} MB`,
      target: "-",
    });
    // What sim holds: the fleet heartbeating at rest, once V8 has given back what the load
    // above took for a while (its memory reducer acts after some idle seconds). Measured after
    // a full collection when `--expose-gc` is given (bench/main.ts gives it).
    await new Promise((resolve) => setTimeout(resolve, REST_MS));
    (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapUsed } = Deno.memoryUsage();
    rows.push({
      measure: `resident memory (heap used), ${REST_MS / 1000} s at rest`,
      value: `${(rss / 2 ** 20).toFixed(0)} MB (${(heapUsed / 2 ** 20).toFixed(0)} MB)`,
      target: "< 500 MB",
    });
    rows.push({ measure: "objects held", value: String(sim.store.count()), target: "-" });
  } finally {
    clearInterval(sampler);
    await sim.stop();
  }
  console.log(`sim API server, ${NODES} nodes, a DaemonSet's ${NODES} pods`);
  console.log(
    markdownTable(["measure", "value", "target"], rows.map((r) => [r.measure, r.value, r.target])),
  );
}

if (import.meta.main) await main();
