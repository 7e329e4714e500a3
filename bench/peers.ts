/**
 * `deno task bench:peers`: edgeroll beside the controllers users would pick instead, one after
 * the other on one KWOK fleet of cluster/ (ADR 0031): kube-controller-manager's DaemonSet
 * controller, kruise-manager, edgeroll (Standard, surge, OpenYurt's AdvancedRollingUpdate). Each
 * rolls the same image change over every node with 10% unavailable, once on the whole fleet and
 * once with some nodes cut off (their Lease taken over) before the update. kwok starts a pod
 * `podReadyDelayMs` after its bind and deletes one at once, so the physical minimum of a rollout
 * is its waves times that delay. Prints a Markdown table, writes JSON to bench/results/; fails
 * only when the bench itself cannot run (a set that never converges, a watch that ends).
 * Every contender runs `--runs` times (3 by default, round after round on the same fleet, so a
 * drift of the machine spreads over all of them); a second table gives each figure's median and
 * its range over the runs, the figures a comparison of the contenders is judged on.
 * `--heap-profiles DIR` starts kube-apiserver with `/debug/pprof` and writes its heap every 5 s of
 * each row's window to DIR (`bench/apiserver-heap.ts`), for `go tool pprof -top` to compare.
 *
 *   deno task bench:peers [--nodes 1000] [--only kcm,kruise,edgeroll,edgeroll-surge,openyurt]
 *                         [--cut-percent 5] [--cut-only kcm,kruise,edgeroll,floor] [--keep-logs]
 *                         [--pod-ready-seconds 2] [--runs 3] [--heap-profiles DIR]
 */
import * as k8s from "@kubernetes/client-node";
import { parseArgs } from "node:util";
import { HeapProfiles } from "./apiserver-heap.ts";
import {
  type ClusterState,
  defaultBinDir,
  stopCluster,
  upCluster,
} from "../cluster/control-plane.ts";
import { kubectl, kubectlJson } from "../cluster/kubectl.ts";
import { reconnectNodes, setNodeLink } from "../cluster/node-link.ts";
import { forEachConcurrently } from "../lib/concurrently.ts";
import { sleep } from "../cluster/processes.ts";
import { markdownTable } from "./markdown-table.ts";
import { figures, figureText, mediansOf, type Row } from "./peers-figures.ts";
import { sum } from "./stats.ts";
import { edgerollCrdFileNames } from "../cli/crd-command.ts";
import {
  type BenchCluster,
  type Contender,
  contenderNamespace,
  contenders,
  peerApp,
  type Running,
} from "./peers-contenders.ts";
import {
  auditedRequests,
  auditPolicy,
  cpuSeconds,
  NodeReadyWatch,
  peakResidentMiB,
  ProcessLoad,
  RolloutWatch,
  type Span,
} from "./peers-measure.ts";

/** A span as the progress lines print it: "2.1 s (p90 4.0, 4,750 nodes)". */
const spanText = ({ nodes, p50, p90 }: Span) =>
  nodes === 0 ? "(no node)" : `${p50.toFixed(1)} s (p90 ${p90.toFixed(1)}, ${nodes} nodes)`;

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    nodes: { type: "string", default: "1000" },
    only: { type: "string", default: Object.keys(contenders).join(",") },
    "cut-percent": { type: "string", default: "5" },
    "cut-only": { type: "string", default: "kcm,kruise,edgeroll,floor" },
    "keep-logs": { type: "boolean", default: false },
    "pod-ready-seconds": { type: "string", default: "2" },
    runs: { type: "string", default: "3" },
    "heap-profiles": { type: "string" },
  },
  strict: true,
});
const nodeCount = Number(flags.nodes);
const cutPercent = Number(flags["cut-percent"]);
const runs = Number(flags.runs);
const chosen = (list: string) =>
  list.split(",").filter(Boolean).map((key) => {
    if (!(key in contenders)) {
      throw new Error(`no contender "${key}": choose among ${Object.keys(contenders).join(", ")}`);
    }
    return key;
  });
if (
  !Number.isInteger(nodeCount) || nodeCount < 10 || !(cutPercent >= 0 && cutPercent < 50) ||
  !(Number(flags["pod-ready-seconds"]) > 0) || !Number.isInteger(runs) || runs < 1 || runs > 9
) {
  console.error(
    "bench:peers: --nodes must be an integer ≥ 10, --cut-percent in [0, 50), " +
      "--pod-ready-seconds above 0, --runs an integer in [1, 9]",
  );
  Deno.exit(2);
}

/** The control plane's components whose own load each row reports. */
const controlPlaneLoadOf = ["kube-apiserver", "etcd"];
/** The harness's processes whose load each row reports too: the cluster's, then this bench. */
const harnessLoadOf = ["kwok"];

/** kwok's pod start: bind to Running and Ready. Deletion is immediate; minReadySeconds 0. */
const podReadyDelayMs = Number(flags["pod-ready-seconds"]) * 1000;
/**
 * A kubelet's default Lease (40 s, renewed every 10 s), longer past 1,000 nodes: kwok renews
 * every quarter of it, so the fleet's renewals stay at most 100 a second, a load of the bench's
 * two cores and not of any contender (ADR 0040).
 */
const nodeLeaseDurationSeconds = Math.max(40, Math.ceil(nodeCount / 25));
/** How long a set may take to converge: 15 min up to 1,000 nodes, 10 min per 1,000 above. */
const convergeTimeoutMinutes = Math.max(15, Math.ceil(nodeCount / 1000) * 10);
const convergeTimeoutMs = convergeTimeoutMinutes * 60_000;
/**
 * A rollout has stalled once this long passes with no more nodes updated; it is given up after
 * `rolloutCapMs` in all, however it goes on.
 */
const stalledMs = 5 * 60_000;
const rolloutCapMs = 3 * 3600_000;

const progress = (message: string) =>
  console.error(`[peers ${new Date().toISOString().slice(11, 19)}] ${message}`);

/**
 * What a Ctrl-C or a SIGTERM must stop, as the bench's own `finally` would: the contender's
 * processes (some detached, as a user's would be) and the cluster. Deno ends on a signal
 * without unwinding, so they would outlive it.
 */
const live = { state: undefined as ClusterState | undefined, pids: new Set<number>() };
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(signal, async () => {
    progress(`${signal}: stopping the contender's processes and the cluster`);
    for (const pid of live.pids) {
      try {
        Deno.kill(pid, "SIGTERM");
      } catch { /* already gone */ }
    }
    if (live.state) await stopCluster(live.state);
    Deno.exit(130);
  });
}

/** The waves a budget of `percent` (rounded up, as every contender does) needs for `nodes`. */
function minimumSeconds(contender: Contender, nodes: number): number {
  const { maxUnavailablePercent, maxSurgePercent } = contender.budget;
  const perWave = Math.ceil(nodeCount * Math.max(maxUnavailablePercent, maxSurgePercent) / 100);
  return Math.ceil(nodes / perWave) * podReadyDelayMs / 1000;
}

async function nodesReady(kubeconfig: string, nodes: string[], ready: boolean) {
  const wanted = new Set(nodes);
  // A cut node turns NotReady two thirds of its Lease after its last renewal.
  const waitMs = Math.max(5 * 60_000, 3 * nodeLeaseDurationSeconds * 1000);
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    const list = await kubectlJson<{
      items: {
        metadata: { name: string };
        status?: { conditions?: { type: string; status: string }[] };
      }[];
    }>(kubeconfig, ["get", "nodes"]);
    const matching = list.items.filter((n) =>
      wanted.has(n.metadata.name) &&
      (n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false) ===
        ready
    );
    if (matching.length === wanted.size) return;
    await sleep(2000);
  }
  throw new Error(
    `${nodes.length} nodes did not turn ${ready ? "Ready" : "NotReady"} in ${waitMs / 60_000} min`,
  );
}

async function setLinks(kubeconfig: string, nodes: string[], verb: "disconnect" | "reconnect") {
  if (verb === "reconnect") {
    await reconnectNodes(kubeconfig, nodes);
  } else {
    // One kubectl per node: a few at once, or 250 cut nodes take minutes of the bench.
    await forEachConcurrently(nodes, 8, (node) => setNodeLink(kubeconfig, node, verb));
  }
  await nodesReady(kubeconfig, nodes, verb === "reconnect");
}

/** The set's image, changed as a user does: a merge patch of its template's container. */
const imagePatch = (image: string) =>
  JSON.stringify({ spec: { template: { spec: { containers: [{ name: "agent", image }] } } } });

/** What one contender's rows share: its processes, its set's namespace and the watch of it. */
interface Stage {
  run: number;
  cluster: BenchCluster;
  key: string;
  running: Running;
  namespace: string;
  watch: RolloutWatch;
  nodeWatch: NodeReadyWatch;
}

/**
 * The window from the image change to the rollout's end on the connected nodes (or the timeout,
 * for a contender that stalls), and what the contender did in it.
 */
async function measureUpdate(stage: Stage, image: string, cut: string[]): Promise<Row> {
  const { run, cluster, key, running, namespace, watch, nodeWatch } = stage;
  const contender = contenders[key];
  const { kubeconfigPath, nodes } = cluster.state;
  const connected = nodes.filter((n) => !cut.includes(n));
  const minimum = minimumSeconds(contender, connected.length);
  const auditOffset = (await Deno.stat(cluster.auditLogPath)).size;
  const bytesBefore = running.bytesRead();
  const cpuBefore = running.pids.map((pid) => cpuSeconds(pid) ?? 0);
  const controlPlane = new ProcessLoad(
    cluster.state.processes.filter((p) => controlPlaneLoadOf.includes(p.name)),
  );
  const harness = new ProcessLoad([
    ...cluster.state.processes.filter((p) => harnessLoadOf.includes(p.name)),
    { name: "bench", pid: Deno.pid },
  ]);
  const heap = flags["heap-profiles"] !== undefined
    ? new HeapProfiles(
      cluster.state,
      flags["heap-profiles"],
      `${key}-cut${cut.length}-run${run}`,
    )
    : undefined;
  const started = Date.now();
  watch.expect(image, connected);
  nodeWatch.expect(connected);
  await kubectl(kubeconfigPath, [
    "--namespace",
    namespace,
    "patch",
    contender.resource,
    peerApp,
    "--type=merge",
    `--patch=${imagePatch(image)}`,
  ]);
  const completed = await watch.until({ stalledMs, capMs: rolloutCapMs });
  const ended = watch.doneAt ?? Date.now();
  await running.verify?.();
  const cpu = running.pids.reduce((sum, pid, i) => sum + (cpuSeconds(pid) ?? 0) - cpuBefore[i], 0);
  const bytesRead = running.bytesRead() - bytesBefore;
  const controlPlaneLoad = controlPlane.stop();
  await heap?.stop();
  const harnessLoad = harness.stop();
  await sleep(3000); // the audit log's batches are written within a second
  const podPhases = watch.podPhases();
  const row: Row = {
    run,
    contender: key,
    row: contender.row,
    nodes: nodes.length,
    cut: cut.length,
    target: connected.length,
    updated: watch.updated,
    completed,
    wallSeconds: (ended - started) / 1000,
    minimumSeconds: minimum,
    requests: await auditedRequests(
      cluster.auditLogPath,
      auditOffset,
      contender.users,
      started,
      ended,
    ),
    bytesRead,
    cpuSeconds: cpu,
    peakRssMiB: peakResidentMiB(running.pids),
    standbyPeakRssMiB: peakResidentMiB(running.standbyPids ?? []),
    maxUnavailable: watch.maxUnavailable,
    budgetUnavailable: Math.ceil(nodes.length * contender.budget.maxUnavailablePercent / 100),
    controlPlane: controlPlaneLoad,
    harness: harnessLoad,
    watchRestarts: watch.restarts,
    podPhases,
    nodesTurnedNotReady: nodeWatch.turnedNotReady.size,
    maxNodesNotReady: nodeWatch.maxNotReady,
  };
  progress(
    `run ${run}, ${key}${cut.length ? ` (${cut.length} cut)` : ""}: ` +
      `${completed ? "rolled out" : "stalled"} on ${watch.updated}/${connected.length} ` +
      `nodes in ${row.wallSeconds.toFixed(1)} s (minimum ${minimum} s); a node's old pod ` +
      `deleted → new pod ${spanText(podPhases.oldDeletedToNew)}, new pod → available ` +
      `${spanText(podPhases.newToAvailable)} (created → Ready by the API server's clock ` +
      `${spanText(podPhases.createdToReady)}); kwok spent ` +
      `${harnessLoad.kwok.cpuSeconds.toFixed(1)} CPU s, the bench ` +
      `${harnessLoad.bench.cpuSeconds.toFixed(1)}` +
      (watch.restarts ? `; the bench's pod watch opened again ${watch.restarts} times` : "") +
      (row.nodesTurnedNotReady
        ? `; ${row.nodesTurnedNotReady} connected nodes turned NotReady (${row.maxNodesNotReady} at once)`
        : ""),
  );
  return row;
}

/**
 * A contender's rows, added to `rows` as they are measured: it is started once, its set created at
 * v1 and converged, rolled to v2 on the whole fleet, then, if `cut` names nodes, rolled to v3 with
 * them cut off (healed after). The set's namespace is deleted once the contender has stopped.
 */
async function measureContender(
  run: number,
  cluster: BenchCluster,
  key: string,
  cut: string[],
  rows: Row[],
) {
  const { kubeconfigPath } = cluster.state;
  const namespace = contenderNamespace(key);
  await kubectl(kubeconfigPath, ["create", "namespace", namespace]);
  try {
    await runContender(run, cluster, key, namespace, cut, rows);
  } finally {
    if (cut.length) await setLinks(kubeconfigPath, cut, "reconnect");
    await kubectl(kubeconfigPath, [
      "delete",
      "namespace",
      namespace,
      "--wait=true",
      "--timeout=10m",
    ]);
  }
}

/** The contender's processes for its rows, which it adds to `rows` as it measures them. */
async function runContender(
  run: number,
  cluster: BenchCluster,
  key: string,
  namespace: string,
  cut: string[],
  rows: Row[],
) {
  const contender = contenders[key];
  const { kubeconfigPath, nodes } = cluster.state;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await contender.run(cluster, async (running) => {
    const pids = [...running.pids, ...running.standbyPids ?? []];
    for (const pid of pids) live.pids.add(pid);
    const watch = new RolloutWatch(kc, namespace, nodes);
    const nodeWatch = new NodeReadyWatch(kc);
    await Promise.all([watch.start(), nodeWatch.start()]);
    try {
      watch.expect(`${peerApp}:v1`);
      await kubectl(
        kubeconfigPath,
        ["apply", "-f", "-"],
        JSON.stringify(contender.manifest(namespace, `${peerApp}:v1`)),
      );
      if (!await watch.until({ stalledMs, capMs: convergeTimeoutMs })) {
        throw new Error(
          `${contender.row}: v1 on ${watch.updated}/${nodes.length} nodes in ${convergeTimeoutMinutes} min`,
        );
      }
      progress(`${key}: v1 on every node`);
      const stage = { run, cluster, key, running, namespace, watch, nodeWatch };
      rows.push(await measureUpdate(stage, `${peerApp}:v2`, []));
      if (cut.length) {
        await setLinks(kubeconfigPath, cut, "disconnect");
        progress(`${key}: ${cut.length} nodes cut off and NotReady`);
        rows.push(await measureUpdate(stage, `${peerApp}:v3`, cut));
      }
    } finally {
      await Promise.all([watch.stop(), nodeWatch.stop()]);
      for (const pid of pids) live.pids.delete(pid);
    }
  });
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** A row's wall time against the floor's in the same run, with the same nodes cut. */
function overFloor(r: Row, floor?: Row): string {
  return r.completed && floor?.completed ? (r.wallSeconds / floor.wallSeconds).toFixed(2) : "—";
}

/** One run's table: every row as measured. */
function printRuns(rows: Row[]) {
  const header = [
    "run",
    "contender",
    "cut",
    "updated",
    "wall s",
    "× minimum",
    "× floor",
    "requests",
    "writes",
    "writes / node",
    "409s",
    "MiB read",
    "CPU s",
    "peak RSS MiB (largest, sum)",
    "standby RSS MiB",
    "kube-apiserver CPU s, peak MiB",
    "etcd CPU s, peak MiB",
    "max unavailable / budget",
  ];
  const load = (r: Row, name: string) =>
    `${r.controlPlane[name].cpuSeconds.toFixed(1)}, ${r.controlPlane[name].peakMiB.toFixed(0)}`;
  const cells = rows.map((r) => [
    String(r.run),
    r.row,
    String(r.cut),
    `${r.updated}/${r.target}${r.completed ? "" : " (stalled)"}`,
    r.wallSeconds.toFixed(1),
    r.completed ? (r.wallSeconds / r.minimumSeconds).toFixed(2) : "—",
    overFloor(r, rows.find((f) => f.contender === "floor" && f.run === r.run && f.cut === r.cut)),
    String(r.requests.requests),
    String(r.requests.writes),
    (r.requests.writes / Math.max(1, r.updated)).toFixed(2),
    String(r.requests.conflicts),
    mib(r.bytesRead),
    r.cpuSeconds.toFixed(1),
    `${Math.max(...r.peakRssMiB).toFixed(0)}, ${sum(r.peakRssMiB).toFixed(0)}`,
    r.standbyPeakRssMiB.length ? r.standbyPeakRssMiB.map((m) => m.toFixed(0)).join(", ") : "—",
    load(r, "kube-apiserver"),
    load(r, "etcd"),
    `${r.maxUnavailable} / ${r.budgetUnavailable}`,
  ]);
  console.log(markdownTable(header, cells));
}

function printMedians(medians: ReturnType<typeof mediansOf>) {
  const floorWall = (cut: number) =>
    medians.find((m) => m.contender === "floor" && m.cut === cut)?.figures["wall s"].median;
  const header = [
    "contender",
    "cut",
    "completed",
    "median wall × floor's",
    ...figures.map((f) => `${f.name}: median (range)`),
    "max unavailable / budget",
  ];
  const cells = medians.map((m) => [
    m.row,
    String(m.cut),
    `${m.completed}/${m.runs}`,
    floorWall(m.cut) === undefined
      ? "—"
      : (m.figures["wall s"].median / floorWall(m.cut)!).toFixed(2),
    ...figures.map(({ name, digits }) => figureText(m.figures[name], digits)),
    `${m.maxUnavailable} / ${m.budgetUnavailable}`,
  ]);
  console.log(markdownTable(header, cells));
}

/** The machine a table was measured on, as the README and the ADR name it. */
function machine() {
  const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/^model name\s*:\s*(.*)$/m)?.[1];
  return {
    cores: navigator.hardwareConcurrency,
    cpu,
    memoryGiB: Math.round(Deno.systemMemoryInfo().total / 2 ** 30),
  };
}

/**
 * The contenders of a run of some of them, in its file's name (`peers-5000-kcm+floor-…`): runs of
 * one size split over sessions keep each their file, and `bench:report` takes each one's newest.
 */
const resultTag = (only: string[]) =>
  only.length === Object.keys(contenders).length ? "" : `${only.join("+")}-`;

/**
 * The commit measured (`git describe --always --dirty`: a dirty tree says so) and the command
 * that measured it, as the result file and the report name them.
 */
async function provenance() {
  const { code, stdout, stderr } = await new Deno.Command("git", {
    args: ["describe", "--always", "--dirty", "--abbrev=12"],
    cwd: new URL("..", import.meta.url).pathname,
  }).output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  if (code !== 0) throw new Error(`git describe in the repository failed: ${text(stderr)}`);
  return {
    commit: text(stdout),
    command: ["deno task bench:peers", ...Deno.args].join(" "),
  };
}

/** The result file's content: the rows so far, whole-fleet first, and their medians. */
function resultOf(
  rows: Row[],
  failures: { run: number; contender: string; error: string }[],
  source: { commit: string; command: string },
) {
  // Whole-fleet rows first, then the cut ones, each group in the contenders' order, by run.
  const sorted = rows.toSorted((a, b) => Math.sign(a.cut) - Math.sign(b.cut) || a.run - b.run);
  return {
    failures,
    date: new Date().toISOString(),
    ...source,
    machine: machine(),
    nodes: nodeCount,
    podReadyDelayMs,
    runs,
    medians: mediansOf(sorted),
    rows: sorted,
  };
}

async function main() {
  const source = await provenance();
  const only = chosen(flags.only);
  const cutOnly = cutPercent > 0 ? chosen(flags["cut-only"]).filter((k) => only.includes(k)) : [];
  const logDir = await Deno.makeTempDir({ prefix: "edgeroll-peers-" });
  const auditLogPath = `${logDir}/audit.log`;
  const users = [...new Set(only.flatMap((key) => contenders[key].users))];
  progress(`cluster/ with ${nodeCount} kwok nodes; logs in ${logDir}`);
  let state: ClusterState | undefined;
  try {
    state = live.state = await upCluster({
      nodes: nodeCount,
      zones: 3,
      podReadyDelayMs,
      nodeLeaseDurationSeconds,
      controllerManagerControllers: ["*", "-daemonset"],
      audit: { policy: auditPolicy(users), logPath: auditLogPath },
      profiling: flags["heap-profiles"] !== undefined,
      log: (event) => progress(JSON.stringify(event)),
    });
    await kubectl(state.kubeconfigPath, [
      "apply",
      ...edgerollCrdFileNames.flatMap((name) => [
        "-f",
        new URL(`../manifests/crd/${name}`, import.meta.url).pathname,
      ]),
    ]);
    const cluster: BenchCluster = { state, binDir: defaultBinDir, logDir, auditLogPath };
    // Spread evenly over the fleet, so the cut nodes span the zones.
    const cutCount = Math.ceil(nodeCount * cutPercent / 100);
    const stride = cutCount > 0 ? Math.floor(nodeCount / cutCount) : 1;
    const cut = state.nodes.filter((_, i) => i % stride === 0).slice(0, cutCount);
    const rows: Row[] = [];
    const failures: { run: number; contender: string; error: string }[] = [];
    await Deno.mkdir(new URL("results/", import.meta.url), { recursive: true });
    const out = new URL(
      // To the minute it started: invocations of one day (runs of one size split over sessions)
      // keep each its file, and bench:report takes the runs of them all.
      `results/peers-${nodeCount}-${resultTag(only)}${
        new Date().toISOString().slice(0, 16).replace(":", "-")
      }.json`,
      import.meta.url,
    );
    let result = resultOf(rows, failures, source);
    for (let run = 1; run <= runs; run++) {
      for (const key of only) {
        try {
          await measureContender(run, cluster, key, cutOnly.includes(key) ? cut : [], rows);
        } catch (err) {
          // One contender that cannot run leaves the others' rows; its error is printed with them.
          const error = err instanceof Error ? err.message : String(err);
          progress(`run ${run}, ${key} failed: ${error}`);
          failures.push({ run, contender: key, error });
        }
        // Written after every contender: a run of hours stopped midway keeps what it measured.
        result = resultOf(rows, failures, source);
        await Deno.writeTextFile(out, JSON.stringify(result, null, 2) + "\n");
      }
    }
    const { medians } = result;
    console.log(
      `\nPeers on cluster/, ${nodeCount} kwok nodes in 3 zones, pods Ready ${
        podReadyDelayMs / 1000
      } s ` +
        `after bind, 10% unavailable, ${
          result.date.slice(0, 10)
        } (${result.machine.cores} cores)\n`,
    );
    printRuns(result.rows);
    console.log(`\nEach figure's median over ${runs} run(s), and its range\n`);
    printMedians(medians);
    for (const { run, contender, error } of failures) {
      console.log(`\n${contender} did not run in run ${run}: ${error}`);
    }
    progress(`written ${out.pathname}`);
    if (flags["keep-logs"]) {
      progress(`the contenders' and the cluster's logs and the audit log: ${logDir}`);
    } else await Deno.remove(logDir, { recursive: true });
  } catch (err) {
    progress(`failed; the contenders' logs and the audit log are kept in ${logDir}`);
    throw err;
  } finally {
    if (state && flags["keep-logs"]) await keepComponentLogs(state.workDir, logDir);
    if (state) await stopCluster(state);
  }
}

/** The control plane's and kwok's own logs, kept beside the contenders' (the cluster's go). */
async function keepComponentLogs(workDir: string, logDir: string) {
  for await (const entry of Deno.readDir(workDir)) {
    if (entry.isFile && entry.name.endsWith(".log")) {
      await Deno.copyFile(`${workDir}/${entry.name}`, `${logDir}/${entry.name}`);
    }
  }
}

await main();
