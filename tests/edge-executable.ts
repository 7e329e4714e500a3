/**
 * `deno task test:edge`: builds the edge agent's single executable (edge/build.sh, npm
 * registry only), runs it with an empty environment against the simulator, and puts it
 * through what the agent under Deno is put through (tests/edge-ota.ts). Prints the file's
 * size and the process's resident memory; asserts no number.
 */
import { assertEquals } from "@std/assert";
import { startSim } from "../sim/start.ts";
import { Kube } from "./e2e/kube.ts";
import { exerciseEdgeAgent, seedOtaUpgrade } from "./edge-ota.ts";
import { freePort } from "../cluster/processes.ts";

const buildScript = new URL("../edge/build.sh", import.meta.url).pathname;

/** The first line `stream` writes. */
async function firstLine(stream: ReadableStreamDefaultReader<string>): Promise<string> {
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await stream.read();
    if (done) break;
    text += value;
  }
  return text.split("\n")[0];
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

Deno.test("edge executable: built from npm packages, runs alone, lists and upgrades on sim", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-edge-exe-" });
  const executable = `${dir}/edgeroll-edge`;
  const built = await new Deno.Command("bash", { args: [buildScript, executable] }).output();
  assertEquals(built.code, 0, new TextDecoder().decode(built.stderr));
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
    ],
    clearEnv: true,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const logs = agent.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    // The agent's first log line says where it listens.
    const first = await firstLine(logs);
    assertEquals(JSON.parse(first || "{}").msg, "edge agent listening", first);
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
