/**
 * `main.ts serve` refused as a user meets it: with the image's grants (no --allow-sys), a bad
 * command line exits 2 naming what to change, before any request is made.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { freePort } from "../cluster/processes.ts";
import { kubeconfigYaml } from "../sim/start.ts";

const main = new URL("../main.ts", import.meta.url).pathname;

Deno.test("main.ts serve: --lease without a name for this replica, or a quiet period not shorter than the event delay, under the image's grants, exits 2 saying what to pass", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-serve-" });
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const out = await new Deno.Command(Deno.execPath(), {
      // The image's grants (Dockerfile, manifests/base): env, its own files, the API server.
      args: [
        "run",
        "--allow-env",
        `--allow-read=${dir}`,
        "--allow-net=127.0.0.1",
        main,
        "serve",
        ...args,
      ],
      env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  };
  try {
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      kubeconfigYaml(`http://127.0.0.1:${freePort()}`, "t"),
    );
    await Deno.writeTextFile(`${dir}/token`, "t");
    const common = [
      `--kubeconfig=${dir}/kubeconfig`,
      `--token-file=${dir}/token`,
      "--lease=edgeroll/leader",
    ];
    const nameless = await run(common);
    assertEquals(nameless.code, 2, nameless.stderr);
    assertStringIncludes(nameless.stderr, "pass --lease-identity, set POD_NAME");
    const badLease = await run([...common.slice(0, 2), "--lease=no-slash"]);
    assertEquals(badLease.code, 2, badLease.stderr);
    assertStringIncludes(badLease.stderr, "--lease no-slash: expected NAMESPACE/NAME");
    for (const events of [["--event-quiet=100ms"], ["--event-delay=100ms", "--event-quiet=1s"]]) {
      const refused = await run([...common.slice(0, 2), ...events]);
      assertEquals(refused.code, 2, refused.stderr);
      assertStringIncludes(refused.stderr, "--event-quiet must be shorter than --event-delay");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
