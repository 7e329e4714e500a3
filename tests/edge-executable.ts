/**
 * `deno task test:edge`: the edge agent's single executable (edge/build.sh, npm registry only,
 * built if the current sources have not been; tests/edge-build.ts), run with an empty
 * environment and a token against the simulator, put through what the agent under Deno is put
 * through (tests/edge-ota.ts). Prints the file's size and the process's resident memory;
 * asserts no number (bench/edge.ts measures).
 */
import { assertEquals } from "@std/assert";
import { startSim } from "../sim/start.ts";
import { Kube } from "./e2e/kube.ts";
import { exerciseEdgeAgent, seedOtaUpgrade } from "./edge-ota.ts";
import { freePort } from "../cluster/processes.ts";
import { edgeExecutable } from "./edge-build.ts";

/** The log lines `stream` writes until one has `msg`; all of them if it ends first. */
async function linesUntil(
  stream: ReadableStreamDefaultReader<string>,
  msg: string,
): Promise<Record<string, unknown>[]> {
  let text = "";
  for (;;) {
    const lines = text.split("\n").slice(0, -1).map((line) => JSON.parse(line));
    if (lines.some((line) => line.msg === msg)) return lines;
    const { value, done } = await stream.read();
    if (done) return lines;
    text += value;
  }
}

/**
 * Resident memory of `pid` in MiB: all of it, the process's own (anonymous) pages, and the pages
 * of files (the executable, shared and clean). Deno reads /proc only with every permission;
 * `cat` needs --allow-run.
 */
async function resident(pid: number): Promise<string> {
  const read = await new Deno.Command("cat", { args: [`/proc/${pid}/status`] }).output();
  const status = new TextDecoder().decode(read.stdout);
  const mib = (field: string) =>
    (Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]) / 1024).toFixed(1);
  return `${mib("VmRSS")} MiB (anon ${mib("RssAnon")}, file ${mib("RssFile")})`;
}

Deno.test("edge executable: built from npm packages, runs alone with a token, lists and upgrades on sim", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-edge-exe-" });
  const executable = await edgeExecutable();
  const { size } = await Deno.stat(executable);

  const sim = await startSim({ nodes: 2, speed: 20 });
  const token = crypto.randomUUID();
  await Deno.writeTextFile(`${dir}/token`, token);
  const port = freePort();
  const agent = new Deno.Command(executable, {
    args: [
      `--kubeconfig=${sim.kubeconfigPath}`,
      "--node=edge-1",
      `--port=${port}`,
      `--token-file=${dir}/token`,
      `--state-dir=${dir}/state`,
    ],
    clearEnv: true,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const logs = agent.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    // A log line says where it listens, and that it asks for the token.
    const lines = await linesUntil(logs, "edge agent listening");
    const listening = lines.find((line) => line.msg === "edge agent listening");
    assertEquals(listening?.token, "required", JSON.stringify(lines));
    const idle = await resident(agent.pid);
    const kube = new Kube(sim.kubeconfigPath);
    const byNode = await seedOtaUpgrade(kube, ["edge-1", "edge-2"]);
    const url = `http://127.0.0.1:${port}`;
    await exerciseEdgeAgent(kube, { url, token, node: "edge-1" }, byNode);
    const busy = await resident(agent.pid);
    console.log(
      `| edge executable | ${
        (size / 2 ** 20).toFixed(1)
      } MiB | RSS idle ${idle} | RSS after the exercise ${busy} |`,
    );
    agent.kill("SIGTERM");
    assertEquals((await agent.status).code, 0, "SIGTERM stops the agent cleanly");
  } finally {
    try {
      agent.kill("SIGKILL");
    } catch { /* already stopped */ }
    await agent.status;
    await logs.cancel();
    await sim.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
