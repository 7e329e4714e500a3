/**
 * The simulator's API server at fleet scale: 5,000 nodes (with their heartbeats, kubelets and
 * controllers running) and 5,000 pods. Prints a table; targets are printed beside the numbers,
 * never asserted.
 */
import { startSim } from "../sim/start.ts";
import type { KubeObject } from "../sim/store.ts";
import { markdownTable } from "./markdown-table.ts";

const NODES = 5_000;
const PODS = 5_000;
const WATCHERS = 10;
const WATCHED_WRITES = 1_000;
const PATCHES = 1_000;

interface Row {
  measure: string;
  value: string;
  target: string;
}

function ms(start: number): number {
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
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

/**
 * A pod shaped like a DaemonSet's that no scheduler takes. It has no ownerReference: the
 * garbage collector would delete pods of an owner that does not exist, and a real owner would
 * bring the DaemonSet controller into the measurement.
 */
function benchPod(i: number): KubeObject {
  const at = "2026-01-01T00:00:00Z";
  const condition = (type: string) => ({ type, status: "True", lastTransitionTime: at });
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `agent-${i}`,
      namespace: "default",
      labels: { app: "agent", "controller-revision-hash": "6d4f8b7c9", i: String(i) },
    },
    spec: {
      schedulerName: "bench",
      containers: [{
        name: "agent",
        image: "registry.local/agent:1.0",
        imagePullPolicy: "IfNotPresent",
        env: [{ name: "NODE_NAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }],
        resources: { requests: { cpu: "50m", memory: "64Mi" } },
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
      }],
      tolerations: [{ operator: "Exists" }],
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
    },
    status: {
      phase: "Running",
      conditions: ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map(condition),
      hostIP: "10.0.0.1",
      podIP: `10.244.${i >> 8}.${i & 255}`,
      startTime: at,
      containerStatuses: [{
        name: "agent",
        ready: true,
        started: true,
        restartCount: 0,
        image: "registry.local/agent:1.0",
        imageID:
          "registry.local/agent@sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        containerID: `containerd://${i.toString(16).padStart(64, "0")}`,
        state: { running: { startedAt: at } },
      }],
      qosClass: "Burstable",
    },
  };
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  let start = performance.now();
  const sim = await startSim({ nodes: NODES, zones: 10 });
  rows.push({
    measure: `start with ${NODES} nodes`,
    value: `${ms(start).toFixed(0)} ms`,
    target: "-",
  });
  try {
    start = performance.now();
    for (let i = 0; i < PODS; i++) {
      sim.store.create("pods", benchPod(i));
    }
    rows.push({
      measure: `store ${PODS} pod creates`,
      value: `${ms(start).toFixed(0)} ms`,
      target: "-",
    });

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
      measure: `list ${PODS} pods (JSON, ${(all.bytes / 1e6).toFixed(1)} MB)`,
      value: `${all.median.toFixed(0)} ms`,
      target: "< 200 ms",
    });
    const table = await list(
      "/api/v1/namespaces/default/pods",
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    );
    rows.push({
      measure: `list ${PODS} pods as Table (kubectl get)`,
      value: `${table.median.toFixed(0)} ms`,
      target: "-",
    });
    const selected = await list("/api/v1/pods?labelSelector=i%3D4999");
    rows.push({
      measure: "list with a label selector (1 match)",
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
      const response = await fetch(`${sim.url}/api/v1/namespaces/default/pods/agent-${i}`, {
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
      const pod = sim.store.get("pods", "default", `agent-${i}`);
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
    // Measured after a full collection when `--expose-gc` is given (bench/main.ts gives it), so
    // the list responses' garbage does not count as memory held.
    (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapUsed } = Deno.memoryUsage();
    rows.push({
      measure: "resident memory (heap used)",
      value: `${(rss / 2 ** 20).toFixed(0)} MB (${(heapUsed / 2 ** 20).toFixed(0)} MB)`,
      target: "< 500 MB",
    });
    rows.push({ measure: "objects held", value: String(sim.store.count()), target: "-" });
  } finally {
    await sim.stop();
  }
  console.log(`sim API server, ${NODES} nodes, ${PODS} pods`);
  console.log(
    markdownTable(["measure", "value", "target"], rows.map((r) => [r.measure, r.value, r.target])),
  );
}

if (import.meta.main) await main();
