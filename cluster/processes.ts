/**
 * Starting and stopping the control plane's processes by PID.
 *
 * Components run detached, in their own session, with output appended to a log file, so
 * `cluster up` can exit and leave them running; `cluster down` (or a test's `finally`)
 * stops them by the PIDs recorded at start.
 */

export interface StartedProcess {
  name: string;
  pid: number;
  /** The binary's path: a PID from an old state file counts only while it still runs this. */
  binary: string;
  logPath: string;
}

/**
 * Starts `binary args…` detached, stdout and stderr appended to `logPath`, and returns once the
 * process runs it (a fresh child runs our own binary until it has exec'd) or has exited. `env` is
 * added to ours.
 */
export async function startDetached(
  name: string,
  binary: string,
  args: string[],
  logPath: string,
  env: Record<string, string> = {},
): Promise<StartedProcess> {
  // Deno's stdio cannot point at a file; a shell that execs keeps the same PID.
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$0" "$@" >>"$EDGEROLL_LOG" 2>&1', binary, ...args],
    env: { ...env, EDGEROLL_LOG: logPath },
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  let exited = false;
  // Reap it if it exits while we run; never keep this process alive for it.
  child.status.then(() => exited = true, () => exited = true);
  child.unref();
  const started = { name, pid: child.pid, binary, logPath };
  while (!exited && !(await isAlive(started))) await sleep(10);
  return started;
}

/**
 * What `ps` says of a process: its state letter, resident KiB and command line, or undefined
 * once it is gone. (Deno reads /proc/PID only with --allow-all; ps needs just --allow-run.)
 */
async function inspect(
  pid: number,
): Promise<{ state: string; rssKiB: number; args: string } | undefined> {
  const { code, stdout } = await new Deno.Command("ps", {
    args: ["-o", "state=,rss=,args=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  const match = new TextDecoder().decode(stdout).trim().match(/^(\S+)\s+(\d+)\s+(.*)$/);
  if (code !== 0 || !match) return undefined;
  return { state: match[1], rssKiB: Number(match[2]), args: match[3] };
}

/**
 * Whether the process still runs our binary (not a zombie, not a reused PID). The command line
 * names the binary both before the wrapping shell execs it and after.
 */
export async function isAlive(process: { pid: number; binary: string }): Promise<boolean> {
  const seen = await inspect(process.pid);
  return seen !== undefined && !seen.state.startsWith("Z") && seen.args.includes(process.binary);
}

/** Resident memory of a process in KiB, or undefined once it is gone. */
export async function residentKiB(pid: number): Promise<number | undefined> {
  return (await inspect(pid))?.rssKiB;
}

/**
 * Stops each process: SIGTERM, then SIGKILL if it is still there after `graceMs`.
 * Processes already gone (or whose PID now runs something else) are skipped; the order given
 * is kept.
 */
export async function stopProcesses(
  processes: readonly { pid: number; binary: string }[],
  graceMs = 10_000,
): Promise<void> {
  for (const process of processes) {
    if (!(await isAlive(process))) continue;
    signal(process.pid, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while ((await isAlive(process)) && Date.now() < deadline) await sleep(100);
    if (await isAlive(process)) signal(process.pid, "SIGKILL");
    while (await isAlive(process)) await sleep(50);
  }
}

function signal(pid: number, sig: Deno.Signal): void {
  try {
    Deno.kill(pid, sig);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** The last `lines` lines of a log file, for error messages. */
export function logTail(path: string, lines = 15): string {
  try {
    return Deno.readTextFileSync(path).trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The ports `freePort` draws from: below the kernel's ephemeral range (Linux's default
 * ip_local_port_range starts at 32768, IANA's, which macOS and the BSDs use, at 49152), from which
 * the kernel hands out ports on its own, to every outgoing connection and to every listener on
 * port 0. (Deno reads /proc/sys only under --allow-all, which the tests do not have.)
 */
export const freePortRange = { from: 10_000, below: 32_768 } as const;

/**
 * A loopback TCP port that was free a moment ago, drawn at random from `freePortRange`. A port
 * the kernel gave a listener on port 0 is in the ephemeral range, so between this call and the
 * bind of the process it is handed to, any outgoing connection on the machine could take it (a
 * kube-apiserver lost its port that way to a parallel test's connection). Below the range only
 * another caller of this function could, drawing from some 22,000 ports.
 */
export function freePort(): number {
  const { from, below } = freePortRange;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = from + Math.floor(Math.random() * (below - from));
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch (err) {
      if (!(err instanceof Deno.errors.AddrInUse)) throw err;
    }
  }
  throw new Error(`no free loopback port in 100 draws between ${from} and ${below}`);
}

/** A file's size in bytes, 0 while it does not exist: where a log's new lines will start. */
export async function fileSize(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return 0;
  }
}

/** What a log holds past `offset` ("" while it does not exist). */
export async function logSince(path: string, offset: number): Promise<string> {
  try {
    return new TextDecoder().decode((await Deno.readFile(path)).subarray(offset));
  } catch {
    return "";
  }
}

/** Fails naming the first of `paths` missing and the `cluster/build.sh` flag that builds it. */
export async function requireBuilt(paths: string[], buildFlag: string): Promise<void> {
  for (const path of paths) {
    await Deno.stat(path).catch(() => {
      throw new Error(`${path} is missing: run cluster/build.sh ${buildFlag} first`);
    });
  }
}
