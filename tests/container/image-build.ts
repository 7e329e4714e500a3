/**
 * The container builds with `podman build` and its entrypoint runs from the cached image
 * content, offline, as the non-root user. Containers cannot be run on the build machines,
 * so the image's root filesystem is exported and the entrypoint runs under chroot.
 *
 * Run by `deno task test:container` (needs podman and busybox-static; `.ci/run` installs them).
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { parse } from "yaml";
import { startSim } from "../../sim/start.ts";
import { edgerollCrdFileNames } from "../../cli/crd-command.ts";

const root = new URL("../../", import.meta.url).pathname;
const denoVersion = (await Deno.readTextFile(`${root}.ci/deno-version`)).trim();
const image = "localhost/edgeroll:ci";

async function run(cmd: string[], options: { cwd?: string } = {}): Promise<string> {
  const output = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    cwd: options.cwd ?? root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`${cmd.join(" ")} failed (${output.code}):\n${text}`);
  return text;
}

/** The server's stderr if it has exited within a moment, for an assertion message. */
async function stderrIfExited(exited: Promise<Deno.CommandOutput>): Promise<string> {
  const timeout = new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 200));
  const output = await Promise.race([exited, timeout]);
  return output ? new TextDecoder().decode(output.stderr) : "serve is still running";
}

/**
 * Starts `command` (the image's entrypoint under chroot), waits until `url` answers 200, hands
 * that answer to `body`, and stops the process, whatever happens. A process that exits first
 * fails the wait with its stderr.
 */
async function untilAnswered(
  command: string[],
  url: string,
  headers: Record<string, string>,
  body: (answer: Response) => Promise<void>,
): Promise<void> {
  const [cmd, ...args] = command;
  const child = new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).spawn();
  const exited = child.output();
  try {
    let answer: Response | undefined;
    for (let i = 0; i < 100 && answer?.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await fetch(url, { headers }).catch(() => undefined);
      if (answer?.status !== 200) await answer?.body?.cancel();
    }
    assertEquals(answer?.status, 200, await stderrIfExited(exited));
    await body(answer!);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* it exited already; its stderr is in the assertion message */ }
    await exited;
  }
}

async function entrypoint(): Promise<string[]> {
  const inspected = JSON.parse(await run(["podman", "image", "inspect", image]));
  return inspected[0].Config.Entrypoint;
}

Deno.test("container: podman build on the Deno image layout, entrypoint runs offline as 1993", async (t) => {
  await run(["bash", "tests/container/make-standin-base.sh", denoVersion]);
  await run([
    "podman",
    "build",
    "--isolation",
    "chroot",
    "--build-arg",
    `DENO_IMAGE=localhost/deno-standin:${denoVersion}`,
    "-t",
    image,
    ".",
  ]);
  const rootfs = await Deno.makeTempDir({ prefix: "edgeroll-rootfs-" });
  const container = (await run(["podman", "create", image])).trim().split("\n").pop()!;
  let procMounted = false;
  try {
    await run(["bash", "-c", `podman export ${container} | tar -C ${rootfs} -x`]);
    await Deno.chmod(rootfs, 0o755); // the image's / is world-readable; makeTempDir's is not
    // Deno reads /proc/self/exe; a container runtime would mount /proc.
    await Deno.mkdir(`${rootfs}/proc`, { recursive: true });
    await run(["mount", "-t", "proc", "proc", `${rootfs}/proc`]);
    procMounted = true;
    const command = await entrypoint();
    assertEquals(command.includes("--cached-only"), true);

    // The entrypoint as the image runs it, under chroot as the non-root user.
    const inImage = (...args: string[]) => [
      "chroot",
      "--userspec=1993:1993",
      rootfs,
      "env",
      "DENO_DIR=/deno-dir",
      "HOME=/home/deno",
      ...[...command, ...args].map((a) => a === "main.ts" ? "/app/main.ts" : a),
    ];

    await t.step("help lists the commands", async () => {
      const cmd = JSON.parse(await run(["podman", "image", "inspect", image]))[0].Config.Cmd;
      assertEquals(cmd.at(-1), "help", "without arguments the image prints its help");
      assertStringIncludes(await run(inImage(...cmd)), "usage: edgeroll <command>");
    });

    await t.step(
      "serve answers /readyz against a cluster, with the image's permissions",
      async () => {
        const sim = await startSim({ nodes: 1 });
        await run([
          "kubectl",
          `--kubeconfig=${sim.kubeconfigPath}`,
          "apply",
          ...edgerollCrdFileNames.flatMap((name) => ["-f", `manifests/crd/${name}`]),
        ]);
        // Where a mounted kubeconfig and token would be: a path the entrypoint may read.
        await Deno.mkdir(`${rootfs}/etc/edgeroll`, { recursive: true });
        await Deno.copyFile(sim.kubeconfigPath, `${rootfs}/etc/edgeroll/kubeconfig`);
        await Deno.chmod(`${rootfs}/etc/edgeroll/kubeconfig`, 0o644); // as a Secret volume mounts it
        await Deno.writeTextFile(`${rootfs}/etc/edgeroll/token`, "container-test-token");
        const port = 20_000 + Math.floor(Math.random() * 20_000);
        // The grants as manifests/base gives them: its mounts; the API server, its listen address.
        const apiserver = new URL(sim.url).host;
        const [cmd, ...args] = inImage(
          "--allow-read=/app,/deno-dir,/etc/edgeroll",
          `--allow-net=${apiserver},127.0.0.1:${port}`,
          "main.ts",
          "serve",
          "--kubeconfig=/etc/edgeroll/kubeconfig",
          "--token-file=/etc/edgeroll/token",
          "--host=127.0.0.1",
          `--port=${port}`,
        );
        try {
          await untilAnswered(
            [cmd, ...args],
            `http://127.0.0.1:${port}/readyz`,
            {},
            async (ready) => {
              await ready.body?.cancel();
              const tick = await fetch(`http://127.0.0.1:${port}/tick`, {
                method: "POST",
                headers: { authorization: "Bearer container-test-token" },
              });
              assertEquals(tick.status, 200, await tick.text());
            },
          );
        } finally {
          await sim.stop();
        }
      },
    );

    await t.step(
      "the edge agent runs with manifests/edge-agent's arguments, reading only its mounts",
      async () => {
        const sim = await startSim({ nodes: 1 });
        const manifest = parse(
          await Deno.readTextFile(`${root}manifests/edge-agent/daemonset.yaml`),
        );
        const edge = manifest.spec.template.spec.containers[0];
        // Where the DaemonSet mounts it: the node's kubelet kubeconfig.
        await Deno.mkdir(`${rootfs}/etc/kubernetes`, { recursive: true });
        await Deno.copyFile(
          await sim.nodeKubeconfig("edge-1"),
          `${rootfs}/etc/kubernetes/kubelet.conf`,
        );
        await Deno.chmod(`${rootfs}/etc/kubernetes/kubelet.conf`, 0o644);
        // The node's state directory (a hostPath, writable): the process's own here.
        const stateDir = (edge.args as string[]).find((a) => a.startsWith("--state-dir="))!
          .slice("--state-dir=".length);
        await Deno.mkdir(`${rootfs}${stateDir}`, { recursive: true });
        await Deno.chown(`${rootfs}${stateDir}`, 1993, 1993);
        const port = 20_000 + Math.floor(Math.random() * 20_000);
        const args = (edge.args as string[]).map((a) =>
          a.replace("$(NODE_NAME)", "edge-1").replace(/^--port=\d+$/, `--port=${port}`)
        );
        try {
          // No token on loopback, as YurtHub: the node's owner calls it as seed 004 does.
          await untilAnswered(
            inImage(...args),
            `http://127.0.0.1:${port}/pods`,
            {},
            async (listed) => assertEquals(Array.isArray((await listed.json()).items), true),
          );
          // Stopped by SIGTERM, it saved its cache where the manifest keeps it.
          const saved = JSON.parse(await Deno.readTextFile(`${rootfs}${stateDir}/pods.json`));
          assertEquals(saved.node, "edge-1");
        } finally {
          await sim.stop();
        }
      },
    );
  } finally {
    await run(["podman", "rm", "-f", container]).catch(() => {});
    if (procMounted) await run(["umount", `${rootfs}/proc`]);
    await Deno.remove(rootfs, { recursive: true }); // only once nothing is mounted below it
  }
});
