import { assert, assertEquals } from "@std/assert";
import { isAlive, logTail, sleep, startDetached, stopProcesses } from "./processes.ts";
import { untilExeced } from "./test-helpers.ts";

Deno.test("a detached process logs to its file, runs on, and stops by its PID", async () => {
  const dir = await Deno.makeTempDir();
  const sleeper = await startDetached(
    "sleeper",
    "/bin/sh",
    // `; true` keeps the shell from exec'ing sleep: the PID keeps running /bin/sh.
    ["-c", "echo started; sleep 30; true"],
    `${dir}/log`,
  );
  try {
    assert(await isAlive(sleeper));
    for (let i = 0; i < 100 && logTail(sleeper.logPath) !== "started"; i++) await sleep(20);
    assertEquals(logTail(sleeper.logPath), "started");
  } finally {
    await stopProcesses([sleeper]);
    await Deno.remove(dir, { recursive: true });
  }
  assertEquals(await isAlive(sleeper), false);
});

Deno.test("a PID that runs another binary is not ours: stopProcesses leaves it alone", async () => {
  const other = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    await untilExeced(other.pid, "sleep");
    const recorded = { pid: other.pid, binary: "/nonexistent/etcd" };
    assertEquals(await isAlive(recorded), false);
    await stopProcesses([recorded]);
    assert(await isAlive({ pid: other.pid, binary: "sleep" }), "an unrelated process was stopped");
  } finally {
    other.kill("SIGKILL");
    await other.status;
  }
});
