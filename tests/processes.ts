/**
 * edgeroll as a user runs it: `main.ts sim`, `serve`, `relay` and `edge`, each its own process, so
 * none of them shares an event loop with another (as the API server, the controller and the
 * relay do not in a cluster). Every process started here is stopped by SIGTERM in `finally`.
 */

import { freePort } from "../cluster/processes.ts";
import { eventually } from "../lib/eventually.ts";
import { edgeExecutable } from "./edge-build.ts";

const main = new URL("../main.ts", import.meta.url).pathname;

/**
 * The environment the container image sets for V8 (the Dockerfile's `DENO_V8_FLAGS`), for
 * measurements of memory as the image runs.
 */
export function imageEnv(): Record<string, string> {
  const dockerfile = Deno.readTextFileSync(new URL("../Dockerfile", import.meta.url));
  const flags = /^ENV DENO_V8_FLAGS=(\S+)$/m.exec(dockerfile)?.[1];
  if (!flags) throw new Error("the Dockerfile sets no ENV DENO_V8_FLAGS");
  return { DENO_V8_FLAGS: flags };
}

/**
 * The base manifest's `--event-delay=…` argument of `serve` and its `--event-quiet=…` if any, so
 * a bench runs the controller with the batching its users deploy (manifests/base/controller.yaml).
 */
export function baseEventArgs(): string[] {
  const manifest = Deno.readTextFileSync(
    new URL("../manifests/base/controller.yaml", import.meta.url),
  );
  const args = [...manifest.matchAll(/^\s*- (--event-(?:delay|quiet)=\S+)$/gm)].map((m) => m[1]);
  if (!args.some((arg) => arg.startsWith("--event-delay="))) {
    throw new Error("manifests/base/controller.yaml passes serve no --event-delay");
  }
  return args;
}

/** `main.ts args…`; its stderr (the JSON log lines) ours, or appended to `logPath`. */
export function spawnMain(
  args: string[],
  env?: Record<string, string>,
  logPath?: string,
): Deno.ChildProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", main, ...args],
    env,
    stdout: "null",
    stderr: logPath ? "piped" : "inherit",
  }).spawn();
  if (logPath) {
    const log = Deno.openSync(logPath, { append: true, create: true });
    child.stderr.pipeTo(log.writable).catch(() => {/* the file closes with the process */});
  }
  return child;
}

/**
 * Fields of a process's /proc/PID/status that are counted in kB; undefined once it has exited.
 * Deno reads another process's /proc only with every permission.
 */
export function statusKiB<F extends string>(
  pid: number,
  fields: readonly F[],
): Record<F, number> | undefined {
  let status: string;
  try {
    status = Deno.readTextFileSync(`/proc/${pid}/status`);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  const kib = {} as Record<F, number>;
  for (const field of fields) {
    const value = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1];
    if (value === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
    kib[field] = Number(value);
  }
  return kib;
}

/** A process's resident size now (Linux's VmRSS) or its highest so far (VmHWM), in MiB. */
export function residentMiB(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number | undefined {
  const kib = statusKiB(pid, [field]);
  return kib && kib[field] / 1024;
}

export async function stop(children: Deno.ChildProcess[]): Promise<void> {
  for (const child of [...children].reverse()) {
    try {
      child.kill("SIGTERM");
    } catch { /* already exited */ }
    await child.status;
  }
}

/**
 * Resolves once `url` answers 2xx; fails when `child` exits first or after `timeoutMs`. An
 * https URL is reached with `client` (its CA).
 */
export async function untilAnswers(
  url: string,
  child: Deno.ChildProcess,
  timeoutMs = 60_000,
  client?: Deno.HttpClient,
) {
  let exited = false;
  child.status.then(() => exited = true);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !exited) {
    const response = await fetch(url, { client }).catch(() => undefined);
    await response?.body?.cancel();
    if (response?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(exited ? `the process serving ${url} exited` : `${url} did not answer`);
}

export interface SimProcess {
  url: string;
  kubeconfigPath: string;
}

/** `main.ts sim` in its own process for the length of `body`. */
export async function withSimProcess(
  options: {
    nodes: number;
    zones?: number;
    speed?: number;
    pullSeconds?: number;
    startSeconds?: number;
  },
  body: (sim: SimProcess) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-sim-" });
  const port = freePort();
  const sim: SimProcess = { url: `http://127.0.0.1:${port}`, kubeconfigPath: `${dir}/kubeconfig` };
  const child = spawnMain([
    "sim",
    `--nodes=${options.nodes}`,
    `--zones=${options.zones ?? 1}`,
    `--speed=${options.speed ?? 1}`,
    ...(options.pullSeconds ? [`--pull-seconds=${options.pullSeconds}`] : []),
    ...(options.startSeconds ? [`--start-seconds=${options.startSeconds}`] : []),
    `--port=${port}`,
    `--kubeconfig=${sim.kubeconfigPath}`,
  ]);
  try {
    await untilAnswers(`${sim.url}/version`, child);
    await body(sim);
  } finally {
    await stop([child]);
    await Deno.remove(dir, { recursive: true });
  }
}

export interface EdgerollProcesses {
  /** The controller's base URL. */
  url: string;
  /** The bearer token the controller accepts. */
  token: string;
  /** Process ids of what was started (the controller first). */
  pids?: number[];
}

/** What `withControllers` started: each replica's base URL, and the token they accept. */
export interface ControllerProcesses {
  urls: string[];
  token: string;
  /** Process ids: the replicas in order, then the relay if there is one. */
  pids: number[];
  /** `fetch` for the controllers' URLs: trusts their CA when they serve HTTPS. */
  fetch(url: string, init?: RequestInit): Promise<Response>;
}

/**
 * `replicas` controllers (`serve`, with `serveArgs` such as `--tick=1s`) and, if `relay`, the
 * relay posting to the first, all processes against `kubeconfigPath`, for the length of `body`.
 * Without `--tick` in `serveArgs` a controller reconciles only when called.
 */
export async function withControllers(
  kubeconfigPath: string,
  options: {
    replicas?: number;
    serveArgs?: string[];
    relay?: boolean;
    relayArgs?: string[];
    /** The relay's own kubeconfig (default: the controllers'). */
    relayKubeconfigPath?: string;
    /** Added to the environment of every process (e.g. `imageEnv()`). */
    env?: Record<string, string>;
    /** Where every process's log lines are appended (default: our stderr). */
    logPath?: string;
    /**
     * Serve HTTPS with this certificate (for 127.0.0.1) and key; the relay and the readiness
     * wait trust `caFile` (an API server calling a webhook of ours, too).
     */
    tls?: { certFile: string; keyFile: string; caFile: string };
  },
  body: (controllers: ControllerProcesses) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-" });
  const children: Deno.ChildProcess[] = [];
  const { tls } = options;
  const client = tls && Deno.createHttpClient({ caCerts: [await Deno.readTextFile(tls.caFile)] });
  try {
    const tokenFile = `${dir}/token`;
    const token = crypto.randomUUID();
    await Deno.writeTextFile(tokenFile, token);
    const common = [`--kubeconfig=${kubeconfigPath}`, `--token-file=${tokenFile}`];
    const urls: string[] = [];
    for (let i = 0; i < (options.replicas ?? 1); i++) {
      const port = freePort();
      const child = spawnMain(
        [
          "serve",
          "--host=127.0.0.1",
          `--port=${port}`,
          ...(tls ? [`--tls-cert=${tls.certFile}`, `--tls-key=${tls.keyFile}`] : []),
          ...common,
          ...(options.serveArgs ?? []),
        ],
        options.env,
        options.logPath,
      );
      children.push(child);
      urls.push(`${tls ? "https" : "http"}://127.0.0.1:${port}`);
      await untilAnswers(`${urls[i]}/readyz`, child, 60_000, client);
    }
    if (options.relay) {
      const kubeconfig = `--kubeconfig=${options.relayKubeconfigPath ?? kubeconfigPath}`;
      children.push(
        spawnMain(
          [
            "relay",
            `--target=${urls[0]}`,
            kubeconfig,
            `--token-file=${tokenFile}`,
            ...(tls ? [`--ca-file=${tls.caFile}`] : []),
            ...(options.relayArgs ?? []),
          ],
          options.env,
          options.logPath,
        ),
      );
    }
    await body({
      urls,
      token,
      pids: children.map((child) => child.pid),
      fetch: (url, init) => fetch(url, { ...init, client }),
    });
  } finally {
    await stop(children);
    client?.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * The controller (`serve`, with `serveArgs` such as `--tick=1s`) and the relay posting to it,
 * two processes against `kubeconfigPath`, for the length of `body`.
 */
export function withEdgeroll(
  kubeconfigPath: string,
  options: {
    serveArgs?: string[];
    relayArgs?: string[];
    env?: Record<string, string>;
    tls?: { certFile: string; keyFile: string; caFile: string };
  },
  body: (edgeroll: EdgerollProcesses) => Promise<void>,
): Promise<void> {
  return withControllers(
    kubeconfigPath,
    { ...options, relay: true },
    ({ urls, token, pids }) => body({ url: urls[0], token, pids }),
  );
}

/** What `withEdgeAgent` started: the agent's URL, and the token it asks for, if any. */
export interface EdgeAgentProcess {
  url: string;
  token?: string;
  pid: number;
  /** Its state directory (pod cache, queued upgrades): kept across `restart()`. */
  stateDir: string;
  /** Stops it (SIGTERM) and starts it again on the same port and state directory. */
  restart(): Promise<void>;
}

/**
 * The edge agent for `node` as a node runs it: the built executable (tests/edge-build.ts), on a
 * loopback port (`port`, or a free one), with no token unless `token`, a state directory of its
 * own, for the length of `body`; returns once its pod watch is connected.
 */
export async function withEdgeAgent(
  kubeconfigPath: string,
  node: string,
  body: (agent: EdgeAgentProcess) => Promise<void>,
  options: { token?: boolean; port?: number } = {},
): Promise<void> {
  const executable = await edgeExecutable();
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-edge-" });
  const port = options.port ?? freePort();
  const token = options.token ? crypto.randomUUID() : undefined;
  const args = [
    `--kubeconfig=${kubeconfigPath}`,
    `--node=${node}`,
    `--port=${port}`,
    `--state-dir=${dir}/state`,
  ];
  if (token) {
    await Deno.writeTextFile(`${dir}/token`, token);
    args.push(`--token-file=${dir}/token`);
  }
  const spawn = () =>
    new Deno.Command(executable, { args, clearEnv: true, stdout: "null", stderr: "inherit" })
      .spawn();
  const url = `http://127.0.0.1:${port}`;
  let child = spawn();
  try {
    await untilAnswers(`${url}/healthz`, child);
    const agent: EdgeAgentProcess = {
      url,
      token,
      pid: child.pid,
      stateDir: `${dir}/state`,
      restart: async () => {
        await stop([child]);
        child = spawn();
        agent.pid = child.pid;
        await untilAnswers(`${url}/healthz`, child);
      },
    };
    await eventually(`the edge agent of ${node} connected`, async () => {
      const health = await (await fetch(`${url}/healthz`)).json();
      return health.connected === true;
    }, { timeoutMs: 60_000 });
    await body(agent);
  } finally {
    await stop([child]);
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * `edgeroll dashboard` against `kubeconfigPath` on a free loopback port, as a person starts it
 * (or `kubectl edgeroll dashboard`, through bin/kubectl-edgeroll on PATH), for the length of
 * `body`; returns once its list page answers.
 */
export async function withDashboard(
  kubeconfigPath: string,
  body: (url: string) => Promise<void>,
  options: { kubectlPlugin?: boolean } = {},
): Promise<void> {
  const port = freePort();
  const args = ["dashboard", `--port=${port}`, `--kubeconfig=${kubeconfigPath}`];
  const child = options.kubectlPlugin
    ? new Deno.Command("kubectl", {
      args: ["edgeroll", ...args],
      env: { PATH: `${new URL("../bin", import.meta.url).pathname}:${Deno.env.get("PATH")}` },
      stdout: "null",
      stderr: "inherit",
    }).spawn()
    : spawnMain(args);
  try {
    const url = `http://127.0.0.1:${port}`;
    await untilAnswers(`${url}/`, child);
    await body(url);
  } finally {
    await stop([child]);
  }
}

/** Copies both output streams of `child` into `path`, in arrival order. */
async function captureOutput(child: Deno.ChildProcess, path: string): Promise<void> {
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  let queue = Promise.resolve();
  const copy = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) {
      queue = queue.then(async () => {
        for (let n = 0; n < chunk.length;) n += await file.write(chunk.subarray(n));
      });
    }
  };
  await Promise.all([copy(child.stdout), copy(child.stderr)]);
  await queue;
}

/**
 * Runs a test binary to its end, both its output streams copied into `logPath`, and says on stderr
 * how it ended (`NAME on LABEL: exit N after S s`); stopped by SIGTERM if this fails first.
 */
export async function runLogged(
  binary: string,
  options: { args: string[]; env: Record<string, string>; cwd: string },
  logPath: string,
  label: string,
): Promise<Deno.CommandStatus> {
  const started = performance.now();
  const child = new Deno.Command(binary, { ...options, stdout: "piped", stderr: "piped" }).spawn();
  let status: Deno.CommandStatus;
  try {
    [status] = await Promise.all([child.status, captureOutput(child, logPath)]);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* it has exited */ }
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const name = binary.split("/").at(-1);
  console.error(`${name} on ${label}: exit ${status.code} after ${seconds} s`);
  return status;
}
