/**
 * The container builds with `podman build` and its entrypoint runs from the cached image
 * content, offline, as the non-root user. Containers cannot be run on the build machines,
 * so the image's root filesystem is exported and the entrypoint runs under chroot.
 *
 * Run by `deno task test:container` (needs podman and busybox-static; `.ci/run` installs them).
 */
import { assertEquals, assertStringIncludes } from "@std/assert";

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
  try {
    await run(["bash", "-c", `podman export ${container} | tar -C ${rootfs} -x`]);
    await Deno.chmod(rootfs, 0o755); // the image's / is world-readable; makeTempDir's is not
    const command = await entrypoint();
    assertEquals(command.includes("--cached-only"), true);

    await t.step("help lists the commands", async () => {
      const out = await run([
        "chroot",
        "--userspec=1993:1993",
        rootfs,
        "env",
        "DENO_DIR=/deno-dir",
        "HOME=/home/deno",
        ...command.map((a) => a === "main.ts" ? "/app/main.ts" : a),
        "help",
      ]);
      assertStringIncludes(out, "usage: edgeroll <command>");
    });
  } finally {
    await run(["podman", "rm", "-f", container]).catch(() => {});
    await Deno.remove(rootfs, { recursive: true });
  }
});
