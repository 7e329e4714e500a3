/**
 * The README's first command, `deno task demo`, works from a fresh clone of the repository
 * (what is committed, nothing from this work tree). Its own CI stage (`deno task
 * test:fresh-clone`), apart from `deno task test`: it runs the whole demo.
 */
import { assertEquals, assertMatch } from "@std/assert";

async function run(cmd: string, args: string[], cwd: string) {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("fresh clone: `deno task demo` rolls the fleet, through a disconnection, to the end; with --bad-image it stops itself and rolls back", async () => {
  const here = new URL(".", import.meta.url).pathname;
  const root = (await run("git", ["rev-parse", "--show-toplevel"], here)).stdout.trim();
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-clone-" });
  try {
    const clone = await run("git", ["clone", "--quiet", root, `${dir}/repo`], dir);
    assertEquals(clone.code, 0, clone.stderr);
    const demo = await run(Deno.execPath(), ["task", "demo"], `${dir}/repo`);
    assertEquals(demo.code, 0, demo.stderr);
    assertMatch(demo.stdout, /^sim http:\/\/127\.0\.0\.1:\d+ with 60 nodes in 3 zones/m);
    assertMatch(demo.stdout, /^disconnected edge-\d+, edge-\d+, edge-\d+: the rollout goes on/m);
    assertMatch(demo.stdout, /^reconnected edge-\d+, edge-\d+, edge-\d+: they are updated/m);
    assertMatch(demo.stdout, /^\| updated at the end +\| 60\/60$/m);
    // The bad version: stopped within its budget, rolled back, every node on the good one.
    const bad = await run(Deno.execPath(), ["task", "demo", "--bad-image"], `${dir}/repo`);
    assertEquals(bad.code, 0, bad.stderr);
    assertMatch(
      bad.stdout,
      /^stopped \(FailureBudgetExceeded\) with \d+ failed pods: rolled back to/m,
    );
    const ranIt = /^\| nodes that ever ran the bad version +\| (\d+)\/60$/m.exec(bad.stdout);
    assertEquals(ranIt !== null && Number(ranIt[1]) <= 12, true, "at most two waves of 6");
    assertMatch(bad.stdout, /^\| on the good version at the end +\| 60\/60$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
