/**
 * `deno task bench:edge`: the edge agent's single executable (edge/build.sh, ADR 0019) as an
 * edge node runs it. Builds it into a temporary directory and prints its size on disk, the time
 * from exec to its first 200 on `/healthz` (each run a fresh process, stopped by SIGTERM and
 * awaited), and its resident memory idle and after 1,000 `GET /pods` (the agent listing its
 * node's pods on a sim, in its own process, with an OTA DaemonSet seeded as tests/edge-ota.ts
 * seeds it). The targets are printed beside the numbers, never asserted.
 *
 *   deno run -A bench/edge.ts [--executable PATH] [--starts N] [--memory-runs N] [--gets N]
 *                             [--idle-ms MS] [--env NAME=VALUE]...
 *
 * `--executable` measures a file already built; `--env` adds to the agent's otherwise empty
 * environment (NODE_OPTIONS, MALLOC_ARENA_MAX: for measuring only, a user's run has neither).
 * -A: Deno reads another process's /proc/PID/status only with every permission.
 *
 * The file's pages are first dropped from the page cache (GNU dd's `iflag=nocache`, which drops
 * that file's clean pages and nothing else) and one start is timed alone, as the first start
 * after a node boots. Without this, the resident file pages depend on how the file came into the
 * cache (written by the build, read whole, or faulted in by earlier runs): the same executable
 * read 43.6 or 52–59 MiB of file pages on this machine's kernel (6.18) as its history differed.
 */
import { parseArgs } from "node:util";
import { freePort } from "../cluster/processes.ts";
import { type SimProcess, statusKiB, withSimProcess } from "../tests/processes.ts";
import { Kube } from "../tests/e2e/kube.ts";
import { seedOtaUpgrade } from "../tests/edge-ota.ts";
import { markdownTable } from "./markdown-table.ts";
import { median } from "./stats.ts";

const buildScript = new URL("../edge/build.sh", import.meta.url).pathname;
const NODE = "edge-1";

export interface EdgeBenchOptions {
  /** Fresh processes timed from exec to their first 200 on /healthz. Default 10. */
  starts?: number;
  /** Processes whose memory is read (the median one's is printed). Default 3. */
  memoryRuns?: number;
  /** `GET /pods` sent, one after the other, before the second reading. Default 1,000. */
  gets?: number;
  /** How long after its first 200 the idle reading is taken. Default 3,000 ms. */
  idleMs?: number;
  /** Added to the agent's otherwise empty environment. */
  env?: Record<string, string>;
}

/** A reading of /proc/PID/status, in KiB. */
export interface Resident {
  rss: number;
  anon: number;
  file: number;
  /** The highest VmRSS so far. */
  hwm: number;
}

export interface EdgeFigures {
  bytes: number;
  /** Exec to first 200 on /healthz, one per fresh process, in ms. */
  startMs: number[];
  /**
   * CPU time the process had used by its first 200 (all its threads), in ms, one per timed
   * start: what the start costs, less sensitive than the wall time to a busy machine.
   */
  startCpuMs: number[];
  /** The first start after the file was dropped from the page cache (undefined: dd failed). */
  coldStartMs?: number;
  /** Exit codes of the timed processes after SIGTERM. */
  exitCodes: number[];
  /** One per memory run. */
  idle: Resident[];
  afterGets: Resident[];
  /** Seconds the `gets` took, one per memory run. */
  getSeconds: number[];
  /** The statuses the `gets` were answered with, over every memory run. */
  statuses: Record<number, number>;
  /** How many pods the first GET /pods listed (the node has one). */
  podsListed: number;
  /** Node's warnings on the agents' stderr, each once. */
  warnings: string[];
  gets: number;
  idleMs: number;
}

/** Builds the executable with edge/build.sh into `out`; throws with its log when it fails. */
export async function buildEdgeExecutable(out: string): Promise<void> {
  const built = await new Deno.Command("bash", { args: [buildScript, out] }).output();
  if (!built.success) {
    throw new Error(`edge/build.sh failed:\n${new TextDecoder().decode(built.stderr)}`);
  }
}

/**
 * Drops `path`'s clean pages from the page cache (posix_fadvise DONTNEED, through GNU dd): the
 * next run reads it as after a boot. False when dd could not.
 */
export async function evictFromPageCache(path: string): Promise<boolean> {
  const dd = new Deno.Command("dd", {
    args: [`if=${path}`, "iflag=nocache", "count=0", "status=none"],
    stdout: "null",
    stderr: "null",
  });
  return (await dd.output()).success;
}

/** CPU time `pid`'s threads have run, in ms (/proc/PID/task/TID/schedstat: ns on a CPU). */
export function cpuMs(pid: number): number {
  let ns = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/schedstat`).split(" ")[0]);
    } catch { /* the thread ended */ }
  }
  return ns / 1e6;
}

/** The resident memory of `pid` now, from /proc/PID/status. */
export function readResident(pid: number): Resident {
  const kib = statusKiB(pid, ["VmRSS", "RssAnon", "RssFile", "VmHWM"]);
  if (kib === undefined) throw new Error(`process ${pid} has exited`);
  return { rss: kib.VmRSS, anon: kib.RssAnon, file: kib.RssFile, hwm: kib.VmHWM };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One agent process: its handle, where it serves, and the tail of what it logged. */
class Agent {
  readonly child: Deno.ChildProcess;
  readonly url: string;
  readonly client = Deno.createHttpClient({});
  readonly spawnedAt: number;
  #log = "";
  #line = "";
  /** Node's warnings on stderr (`Code cache data rejected` when V8's flags differ from the build's). */
  readonly warnings = new Set<string>();
  #drained: Promise<void>;
  #exited = false;

  constructor(executable: string, sim: SimProcess, tokenFile: string, env: Record<string, string>) {
    const port = freePort();
    this.url = `http://127.0.0.1:${port}`;
    this.spawnedAt = performance.now();
    this.child = new Deno.Command(executable, {
      args: [
        `--kubeconfig=${sim.kubeconfigPath}`,
        `--node=${NODE}`,
        `--port=${port}`,
        `--token-file=${tokenFile}`,
      ],
      clearEnv: true,
      env,
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.child.status.then(() => this.#exited = true);
    this.#drained = this.child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({ write: (text) => this.#logged(text) }),
    ).catch(() => {/* the process is gone */});
  }

  #logged(text: string): void {
    this.#log = (this.#log + text).slice(-4000);
    const lines = (this.#line + text).split("\n");
    this.#line = lines.pop()!;
    for (const line of lines) {
      const warning = /^\(node:\d+\) (\w*Warning: .*)$/.exec(line)?.[1];
      if (warning) this.warnings.add(warning);
    }
  }

  /** The time (performance.now()) of the first 200 on /healthz, polled every 2 ms. */
  async healthy(timeoutMs = 30_000): Promise<number> {
    const deadline = this.spawnedAt + timeoutMs;
    while (performance.now() < deadline) {
      const response = await fetch(`${this.url}/healthz`, { client: this.client })
        .catch(() => undefined);
      const at = performance.now();
      await response?.body?.cancel();
      if (response?.status === 200) return at;
      if (this.#exited) break;
      await sleep(2);
    }
    throw new Error(
      `the agent ${this.#exited ? "exited" : "did not answer /healthz"}; its log:\n${this.#log}`,
    );
  }

  /** Its resident memory now; throws with its log when it has exited. */
  async resident(): Promise<Resident> {
    try {
      return readResident(this.child.pid);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      const { code, signal } = await this.child.status;
      await this.#drained;
      throw new Error(`the agent exited (code ${code}, signal ${signal}); its log:\n${this.#log}`);
    }
  }

  /** SIGTERM, awaited (SIGKILL after 10 s); the exit code. Once, however often it is called. */
  stop(): Promise<number> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  #stopped?: Promise<number>;

  async #stop(): Promise<number> {
    if (!this.#exited) {
      try {
        this.child.kill("SIGTERM");
      } catch { /* already exited */ }
    }
    const timer = setTimeout(() => {
      try {
        this.child.kill("SIGKILL");
      } catch { /* exited meanwhile */ }
    }, 10_000);
    const { code } = await this.child.status;
    clearTimeout(timer);
    await this.#drained;
    this.client.close();
    return code;
  }
}

/**
 * Measures `executable` against `sim` (an OTA DaemonSet already seeded). Every agent started is
 * stopped, by its handle, before this returns or throws.
 */
export async function measureEdgeExecutable(
  executable: string,
  sim: SimProcess,
  options: EdgeBenchOptions = {},
): Promise<EdgeFigures> {
  const { starts = 10, memoryRuns = 3, gets = 1_000, idleMs = 3_000, env = {} } = options;
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-bench-edge-" });
  const token = crypto.randomUUID();
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, token);
  const figures: EdgeFigures = {
    bytes: (await Deno.stat(executable)).size,
    startMs: [],
    startCpuMs: [],
    exitCodes: [],
    idle: [],
    afterGets: [],
    getSeconds: [],
    statuses: {},
    podsListed: 0,
    warnings: [],
    gets,
    idleMs,
  };
  const agents: Agent[] = [];
  try {
    if (await evictFromPageCache(executable)) {
      const agent = new Agent(executable, sim, tokenFile, env);
      agents.push(agent);
      figures.coldStartMs = (await agent.healthy()) - agent.spawnedAt;
      figures.exitCodes.push(await agent.stop());
    }
    for (let i = 0; i < starts; i++) {
      const agent = new Agent(executable, sim, tokenFile, env);
      agents.push(agent);
      figures.startMs.push((await agent.healthy()) - agent.spawnedAt);
      figures.startCpuMs.push(cpuMs(agent.child.pid));
      figures.exitCodes.push(await agent.stop());
    }
    for (let i = 0; i < memoryRuns; i++) {
      const agent = new Agent(executable, sim, tokenFile, env);
      agents.push(agent);
      await agent.healthy();
      await sleep(idleMs);
      figures.idle.push(await agent.resident());
      const started = performance.now();
      for (let n = 0; n < gets; n++) {
        const response = await fetch(`${agent.url}/pods`, {
          client: agent.client,
          headers: { authorization: `Bearer ${token}` },
        });
        const text = await response.text();
        figures.statuses[response.status] = (figures.statuses[response.status] ?? 0) + 1;
        if (i === 0 && n === 0 && response.status === 200) {
          figures.podsListed = JSON.parse(text).items.length;
        }
      }
      figures.getSeconds.push((performance.now() - started) / 1000);
      figures.afterGets.push(await agent.resident());
      await agent.stop();
    }
    figures.warnings = [...new Set(agents.flatMap((agent) => [...agent.warnings]))];
    return figures;
  } finally {
    for (const agent of agents) await agent.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

const mib = (kib: number) => (kib / 1024).toFixed(1);
const mb = (kib: number) => (kib * 1024 / 1e6).toFixed(1);

/** The reading of the median run by VmRSS, split, with the range over the runs. */
function residentCell(readings: Resident[], peak = false): string {
  const byRss = [...readings].sort((a, b) => a.rss - b.rss);
  const mid = byRss[Math.floor(byRss.length / 2)];
  let cell = `${mib(mid.rss)} MiB (${mb(mid.rss)} MB): anon ${mib(mid.anon)}, file ${
    mib(mid.file)
  }`;
  if (peak) cell += `; peak ${mib(mid.hwm)}`;
  if (readings.length > 1) {
    cell += `; ${readings.length} runs ${mib(byRss[0].rss)}–${mib(byRss.at(-1)!.rss)}`;
  }
  return cell;
}

/** The table's rows: measure, value, target. */
export function edgeRows(f: EdgeFigures): string[][] {
  const statuses = Object.entries(f.statuses).map(([status, n]) => `${n} × ${status}`).join(", ");
  const exits = [...new Set(f.exitCodes)].join(", ");
  return [
    [
      "file size",
      `${(f.bytes / 2 ** 20).toFixed(1)} MiB (${(f.bytes / 1e6).toFixed(1)} MB)`,
      "≤ 110 MB",
    ],
    [
      "start: exec → first 200 on /healthz",
      `median ${median(f.startMs).toFixed(0)} ms, max ${Math.max(...f.startMs).toFixed(0)} ms ` +
      `(${f.startMs.length} runs, min ${Math.min(...f.startMs).toFixed(0)}); ` +
      (f.coldStartMs === undefined
        ? "file not dropped from the page cache (no GNU dd)"
        : `first after the file left the page cache ${f.coldStartMs.toFixed(0)} ms`) +
      `; exit ${exits} on SIGTERM`,
      "< 300 ms",
    ],
    [
      "CPU time by the first 200 (all threads)",
      `median ${median(f.startCpuMs).toFixed(0)} ms, max ${
        Math.max(...f.startCpuMs).toFixed(0)
      } ms`,
      "-",
    ],
    [`resident idle, ${f.idleMs / 1000} s after start`, residentCell(f.idle), "≤ 60 MB"],
    [
      `resident after ${f.gets.toLocaleString("en")} GET /pods`,
      residentCell(f.afterGets, true),
      "-",
    ],
    [
      `${f.gets.toLocaleString("en")} GET /pods, one after the other`,
      `median ${median(f.getSeconds).toFixed(1)} s; ${statuses}; ${f.podsListed} pod listed`,
      "-",
    ],
    ["Node's warnings on stderr", f.warnings.join("; ") || "none", "none"],
  ];
}

if (import.meta.main) {
  const { values: flags } = parseArgs({
    args: Deno.args,
    options: {
      executable: { type: "string" },
      starts: { type: "string" },
      "memory-runs": { type: "string" },
      gets: { type: "string" },
      "idle-ms": { type: "string" },
      env: { type: "string", multiple: true },
    },
    strict: true,
  });
  const number = (raw: string | undefined) => raw === undefined ? undefined : Number(raw);
  const env = Object.fromEntries(
    (flags.env ?? []).map((
      pair,
    ) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]),
  );
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-bench-edge-build-" });
  try {
    let executable = flags.executable;
    if (executable === undefined) {
      executable = `${dir}/edgeroll-edge`;
      await buildEdgeExecutable(executable);
    }
    await withSimProcess({ nodes: 2, speed: 20 }, async (sim) => {
      await seedOtaUpgrade(new Kube(sim.kubeconfigPath), ["edge-1", "edge-2"]);
      const figures = await measureEdgeExecutable(executable, sim, {
        starts: number(flags.starts),
        memoryRuns: number(flags["memory-runs"]),
        gets: number(flags.gets),
        idleMs: number(flags["idle-ms"]),
        env,
      });
      const envNote = Object.keys(env).length ? ` with ${flags.env!.join(" ")}` : "";
      const what = flags.executable ?? "built by edge/build.sh";
      console.log(`\nedge agent single executable (${what})${envNote}, on sim\n`);
      console.log(markdownTable(["measure", "value", "target"], edgeRows(figures)));
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
