/**
 * The edge agent as a node runs it: the Node single executable `edge/build.sh` makes, built once
 * for the sources it is made of and kept under `.cache/edge-build/` by their digest, so every
 * test of one checkout that runs the agent runs the same built file, and a changed source builds
 * a new one.
 */
const root = new URL("..", import.meta.url).pathname;
/** What the bundle is made of: the rooms the agent imports, its build script and versions. */
const sourceDirs = ["edge", "kube", "routes", "controller", "api", "lib", "engine"];

async function sourceDigest(): Promise<string> {
  const files: string[] = [`${root}edge/build.sh`, `${root}deno.json`];
  for (const dir of sourceDirs) {
    for await (const entry of Deno.readDir(`${root}${dir}`)) {
      if (entry.isFile && entry.name.endsWith(".ts")) files.push(`${root}${dir}/${entry.name}`);
    }
  }
  const hash = new Uint8Array(32);
  for (const file of files.sort()) {
    const digest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", await Deno.readFile(file)),
    );
    for (let i = 0; i < hash.length; i++) hash[i] = (hash[i] * 31 + digest[i]) & 0xff;
  }
  return [...hash.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

let built: Promise<string> | undefined;

/** The path of the executable for the current sources, built if it is not there yet. */
export function edgeExecutable(): Promise<string> {
  built ??= (async () => {
    const path = `${root}.cache/edge-build/edgeroll-edge-${await sourceDigest()}`;
    try {
      await Deno.stat(path);
      return path;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    const out = await new Deno.Command("bash", {
      args: [`${root}edge/build.sh`, `${path}.tmp`],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (out.code !== 0) throw new Error(`edge/build.sh failed (exit ${out.code})`);
    await Deno.rename(`${path}.tmp`, path);
    return path;
  })();
  return built;
}
