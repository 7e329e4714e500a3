import { assert, assertEquals } from "@std/assert";
import {
  freePort,
  freePortRange,
  isAlive,
  logTail,
  sleep,
  startDetached,
  stopProcesses,
} from "./processes.ts";
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

Deno.test("a free port lies below the machine's ephemeral range, where no outgoing connection takes it, and binds", async () => {
  // Read by a child: Deno reads /proc/sys only under --allow-all.
  const { stdout } = await new Deno.Command("cat", {
    args: ["/proc/sys/net/ipv4/ip_local_port_range"],
  }).output();
  const ephemeralStart = Number(new TextDecoder().decode(stdout).trim().split(/\s+/)[0]);
  assert(
    freePortRange.below <= ephemeralStart,
    `this machine's ephemeral range starts at ${ephemeralStart}, below ${freePortRange.below}`,
  );
  const ports = Array.from({ length: 200 }, () => freePort());
  for (const port of ports) {
    assert(port >= freePortRange.from && port < freePortRange.below, `port ${port} out of range`);
  }
  const listener = Deno.listen({ hostname: "127.0.0.1", port: ports[0] });
  assertEquals((listener.addr as Deno.NetAddr).port, ports[0]);
  listener.close();
});
