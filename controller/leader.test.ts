import { assert, assertEquals } from "@std/assert";
import { LeaderElection, type LeaseTimes } from "./leader.ts";
import { memoryApi } from "../tests/doubles/memory-api.ts";
import { ManualTimers } from "../tests/doubles/manual-timers.ts";
import { memoryLogger } from "../lib/log.ts";
import { KubeError } from "../kube/errors.ts";
import type { KubeApi } from "../kube/api.ts";

const times: LeaseTimes = { durationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
type LeaseApi = Pick<KubeApi, "getLease" | "createLease" | "replaceLease">;

/** A replica's election over `api`, with what it was told, on shared manual time. */
function replica(identity: string, api: LeaseApi, timers: ManualTimers) {
  const told: string[] = [];
  const logs = memoryLogger();
  const election = new LeaderElection({
    api,
    namespace: "edgeroll-system",
    name: "edgeroll-controller",
    identity,
    times,
    timers,
    logger: logs,
    onStartedLeading: () => told.push(`started at ${timers.now()}`),
    onStoppedLeading: () => told.push(`stopped at ${timers.now()}`),
  });
  return { election, told, logs };
}

/** `api` whose Lease calls fail (a partitioned or hung replica) while `cut.on` is set. */
function cuttable(api: LeaseApi) {
  const cut = { on: false };
  const fail = () => Promise.reject(new KubeError(0, "Unreachable", "connection refused", "test"));
  const wrapped: LeaseApi = {
    getLease: (p) => cut.on ? fail() : api.getLease(p),
    createLease: (p) => cut.on ? fail() : api.createLease(p),
    replaceLease: (p) => cut.on ? fail() : api.replaceLease(p),
  };
  return { api: wrapped, cut };
}

const holder = (
  api: ReturnType<typeof memoryApi>,
) => (api.objects.leases.get("edgeroll-system/edgeroll-controller")?.spec as {
  holderIdentity?: string;
  leaseTransitions?: number;
  renewTime?: string;
});

Deno.test("leader election: one replica takes the Lease, the other waits and only reads it", async () => {
  const timers = new ManualTimers();
  const api = memoryApi();
  const a = replica("a", api, timers);
  a.election.start();
  await timers.advance(0);
  const b = replica("b", api, timers);
  b.election.start();
  await timers.advance(20_000);
  assertEquals(a.election.leading, true);
  assertEquals(b.election.leading, false);
  assertEquals(a.told, [`started at ${Date.UTC(2026, 0, 1)}`]);
  assertEquals(b.told, []);
  assertEquals(holder(api).holderIdentity, "a");
  // a's create, then a renewal every retry period; b never wrote.
  assertEquals(api.writes.filter((w) => w === "create leases").length, 1);
  assertEquals(api.writes.filter((w) => w === "update leases").length, 10);
  assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(holder(api).renewTime!), "a MicroTime");
  await a.election.stop();
  await b.election.stop();
});

Deno.test("leader election: a holder that cannot renew stops leading before another takes over, within twice the Lease duration", async () => {
  const timers = new ManualTimers();
  const api = memoryApi();
  const { api: aApi, cut } = cuttable(api);
  const a = replica("a", aApi, timers);
  const b = replica("b", api, timers);
  a.election.start();
  await timers.advance(0);
  b.election.start();
  await timers.advance(4_000);
  const cutAt = timers.now();
  cut.on = true;
  await timers.advance(30_000);
  assertEquals(a.election.leading, false);
  assertEquals(b.election.leading, true);
  const stoppedAt = Number(a.told[1].split(" at ")[1]);
  const startedAt = Number(b.told[0].split(" at ")[1]);
  assert(stoppedAt < startedAt, `a stopped (${stoppedAt}) before b started (${startedAt})`);
  assert(startedAt - cutAt <= 2 * times.durationMs, `b took over ${startedAt - cutAt} ms after`);
  assertEquals(holder(api).holderIdentity, "b");
  assertEquals(holder(api).leaseTransitions, 1);
  assert(a.logs.lines.some((l) => l.msg === "lease lost: not renewed within the renew deadline"));
  await b.election.stop();
});

Deno.test("leader election: a leader that stops gives the Lease up, and the next takes it at its next try", async () => {
  const timers = new ManualTimers();
  const api = memoryApi();
  const a = replica("a", api, timers);
  const b = replica("b", api, timers);
  a.election.start();
  await timers.advance(0);
  b.election.start();
  await timers.advance(1_000);
  const stoppedAt = timers.now();
  await a.election.stop();
  assertEquals(holder(api).holderIdentity, "");
  await timers.advance(times.retryPeriodMs);
  assertEquals(b.election.leading, true);
  assert(Number(b.told[0].split(" at ")[1]) - stoppedAt <= times.retryPeriodMs);
  await b.election.stop();
});

Deno.test("leader election: two replicas starting together: one creates the Lease, one leads", async () => {
  const timers = new ManualTimers();
  const api = memoryApi();
  const replicas = ["a", "b", "c"].map((id) => replica(id, api, timers));
  for (const r of replicas) r.election.start();
  await timers.advance(10_000);
  assertEquals(replicas.filter((r) => r.election.leading).length, 1);
  assertEquals(api.writes.filter((w) => w === "create leases").length, 1);
  for (const r of replicas) await r.election.stop();
});

Deno.test("leader election: a Lease it may not read is said every retry period, and never led", async () => {
  const timers = new ManualTimers();
  const forbidden = () =>
    Promise.reject(new KubeError(403, "Forbidden", "leases is forbidden", "t"));
  const a = replica("a", {
    getLease: forbidden,
    createLease: forbidden,
    replaceLease: forbidden,
  }, timers);
  a.election.start();
  await timers.advance(6_000);
  assertEquals(a.election.leading, false);
  const errors = a.logs.lines.filter((l) => l.msg === "lease not taken or renewed");
  assertEquals(errors.length, 4);
  assert(String(errors[0].error).includes("forbidden"));
  await a.election.stop();
});
