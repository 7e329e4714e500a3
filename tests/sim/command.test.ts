/**
 * `edgeroll sim` as a process: it serves, writes its kubeconfig, says it is ready, and stops
 * cleanly on SIGTERM; a bad flag is a usage error.
 */
import { assertEquals, assertMatch, assertStringIncludes } from "@std/assert";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test("sim command: ready line, working kubeconfig, clean stop on SIGTERM", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-sim-cmd-" });
  const kubeconfig = `${dir}/sim.kubeconfig`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MAIN,
      "sim",
      "--",
      "--nodes",
      "4",
      "--port",
      "0",
      "--kubeconfig",
      kubeconfig,
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let exited = false;
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    const ready = out.split("\n")[0];
    assertMatch(ready, /^sim ready on http:\/\/127\.0\.0\.1:\d+$/);
    const url = ready.slice("sim ready on ".length);
    assertStringIncludes(await Deno.readTextFile(kubeconfig), `server: ${url}`);
    const nodes = await (await fetch(`${url}/api/v1/nodes`)).json();
    assertEquals(nodes.items.length, 4);
    child.kill("SIGTERM");
    const [status] = await Promise.all([child.status, reader.cancel(), child.stderr.cancel()]);
    exited = true;
    assertEquals(status.code, 0);
  } finally {
    if (!exited) {
      try {
        child.kill("SIGKILL");
      } catch { /* it had already exited */ }
      await child.status;
    }
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sim command: a bad flag exits 2 with the reason", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "sim", "--nodes", "many"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(out.code, 2);
  assertStringIncludes(new TextDecoder().decode(out.stderr), "--nodes must be a whole number");
});
