// deno-lint-ignore-file no-explicit-any -- objects read from the simulator's store are untyped
/**
 * `deno task soak` (#13): the controller as a fleet would run it, for minutes, under every
 * fault at once. sim with 1,000 nodes; two `serve` replicas ticking and two relays, each its
 * own process with the container image's V8 flags; 10% of writes failing with 5xx and 5% of all calls with 429, 20 ms of latency,
 * watches cut every 10–30 s and the watch history compacted now and then; a fuzzer posting
 * bad bodies, bad batches, bad headers and bad tokens at a fixed rate; one replica killed
 * (SIGKILL) and started again every two minutes; rollouts back to back over four sets, one per
 * zone: Standard, Surging, InPlaceIfPossible and an OpenYurt AdvancedRollingUpdate DaemonSet.
 *
 * Checked the whole time, from the simulator's own stream of commits: no set ever has more
 * Ready nodes without an available pod than its budget (a NotReady node is outside the budget,
 * as the engine counts it: an overloaded machine can starve sim's heartbeats), no more nodes surged (a second pod not
 * yet available, as upstream counts surge) than maxSurge, and no node more than two pods. Checked at the end: every rollout completed, no controller write in a minute of
 * ticks at rest, each process's resident memory within its manifest limit and not growing
 * from the first third of the run to the last, no 5xx to a valid request that the
 * controller made itself (a 503 passing on the API server's injected faults is counted
 * apart), and every bad request answered 4xx. It prints these figures as tables.
 *
 * Not part of `deno task test` (its file name is no test file's); `.ci/run` runs it as a stage.
 * It runs with -A: Deno 2 lets only that read another process's /proc/<pid>/status.
 *   SOAK_MINUTES (default 7) rollout phase; SOAK_NODES (default 1000); SOAK_RESTART_SECONDS
 *   (default 120).
 */
import { assertEquals } from "@std/assert";
import { edgerollCrds } from "../../api/crd.ts";
import { writtenStatus } from "../../api/written-status.ts";
import { freePort } from "../../cluster/processes.ts";
import { startClusterBehaviour } from "../../sim/cluster/mod.ts";
import { startSim } from "../../sim/start.ts";
import { markdownTable } from "../../bench/markdown-table.ts";
import { type SeenPod, seenPod } from "../controller-on-sim.ts";
import { imageEnv, residentMiB, spawnMain, stop, untilAnswers } from "../processes.ts";

const minutes = Number(Deno.env.get("SOAK_MINUTES") ?? 7);
const nodeCount = Number(Deno.env.get("SOAK_NODES") ?? 1000);
const zones = 4;
const restartEveryMs = Number(Deno.env.get("SOAK_RESTART_SECONDS") ?? 120) * 1000;
/** The manifests' memory limits (manifests/base), which the processes must stay within. */
const limitMiB = { serve: 640, relay: 320 };
const token = crypto.randomUUID();

interface SetUnderTest {
  name: string;
  kind: "advanceddaemonsets" | "daemonsets";
  zone: string;
  /** Nodes that may lack an available pod at once; live pods a node may hold at once. */
  maxUnavailable: number;
  maxSurge: number;
  body(image: string): Record<string, unknown>;
}

function advancedSet(
  name: string,
  zone: string,
  rollingUpdate: Record<string, unknown>,
): (image: string) => Record<string, unknown> {
  return (image) => ({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name, namespace: "default" },
    spec: {
      selector: { matchLabels: { app: name } },
      template: template(name, zone, image),
      updateStrategy: { type: "RollingUpdate", rollingUpdate },
    },
  });
}

function template(name: string, zone: string, image: string) {
  return {
    metadata: { labels: { app: name } },
    spec: {
      nodeSelector: { "topology.kubernetes.io/zone": zone },
      containers: [{ name: "agent", image }],
    },
  };
}

const sets: SetUnderTest[] = [
  {
    name: "soak-standard",
    kind: "advanceddaemonsets",
    zone: "zone-1",
    maxUnavailable: 0.1,
    maxSurge: 0,
    body: advancedSet("soak-standard", "zone-1", {
      rollingUpdateType: "Standard",
      maxUnavailable: "10%",
    }),
  },
  {
    name: "soak-surging",
    kind: "advanceddaemonsets",
    zone: "zone-2",
    maxUnavailable: 0,
    maxSurge: 0.1,
    body: advancedSet("soak-surging", "zone-2", {
      rollingUpdateType: "Standard",
      maxSurge: "10%",
      maxUnavailable: 0,
    }),
  },
  {
    name: "soak-inplace",
    kind: "advanceddaemonsets",
    zone: "zone-3",
    maxUnavailable: 0.1,
    maxSurge: 0,
    body: advancedSet("soak-inplace", "zone-3", {
      rollingUpdateType: "InPlaceIfPossible",
      maxUnavailable: "10%",
    }),
  },
  {
    name: "soak-openyurt",
    kind: "daemonsets",
    zone: "zone-4",
    maxUnavailable: 0.1,
    maxSurge: 0,
    body: (image) => ({
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: {
        name: "soak-openyurt",
        namespace: "default",
        annotations: {
          "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
          "apps.openyurt.io/max-unavailable": "10%",
        },
      },
      spec: {
        selector: { matchLabels: { app: "soak-openyurt" } },
        template: template("soak-openyurt", "zone-4", image),
        updateStrategy: { type: "OnDelete" },
      },
    }),
  },
];

const collection = (s: SetUnderTest) =>
  s.kind === "advanceddaemonsets"
    ? "/apis/apps.edgeroll.dev/v1alpha1/namespaces/default/advanceddaemonsets"
    : "/apis/apps/v1/namespaces/default/daemonsets";

const rolloutStatusCollection =
  "/apis/apps.edgeroll.dev/v1alpha1/namespaces/default/rolloutstatuses";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)];

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

Deno.test(`soak: ${nodeCount} nodes, ${minutes} minutes of rollouts under faults`, async () => {
  const sim = await startSim({
    nodes: nodeCount,
    zones,
    behaviour: (store, o) =>
      startClusterBehaviour(store, {
        nodes: o.nodes,
        zones: o.zones,
        speed: 20,
        seed: 13,
        log: () => {},
      }),
  });
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-soak-" });
  const tokenFile = `${dir}/token`;
  await Deno.writeTextFile(tokenFile, token);
  const ports = [freePort(), freePort()];
  const urls = ports.map((port) => `http://127.0.0.1:${port}`);
  const serve = (port: number) =>
    spawnMain([
      "serve",
      "--host=127.0.0.1",
      `--port=${port}`,
      `--kubeconfig=${sim.kubeconfigPath}`,
      `--token-file=${tokenFile}`,
      "--tick=5s",
    ], imageEnv());
  const replicas: Deno.ChildProcess[] = [];
  const relays: Deno.ChildProcess[] = [];
  const background: Promise<void>[] = [];
  let running = true;

  /** The operator's own calls, retried through the injected faults (backoff capped at 2 s). */
  const api = async (method: string, path: string, body?: unknown) => {
    for (let attempt = 0;; attempt++) {
      const response = await fetch(`${sim.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${sim.token}`,
          "content-type": method === "PATCH" ? "application/merge-patch+json" : "application/json",
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (response.ok) return JSON.parse(text);
      if ((response.status === 429 || response.status >= 500) && attempt < 10) {
        await sleep(Math.min(2000, 100 * 2 ** attempt));
        continue;
      }
      throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
    }
  };

  // What the watch sees: per set, its pods by uid, and the worst moments.
  const zoneNodes = new Map<string, string[]>();
  for (const node of sim.store.scan("nodes") as any[]) {
    const zone = node.metadata.labels["topology.kubernetes.io/zone"];
    zoneNodes.set(zone, [...(zoneNodes.get(zone) ?? []), node.metadata.name]);
  }
  const podsOf = new Map(sets.map((s) => [s.name, new Map<string, SeenPod>()]));
  const armed = new Set<string>();
  const worst = new Map(
    sets.map((s) => [s.name, { unavailable: 0, surged: 0, onOneNode: 0, notReadyNodes: 0 }]),
  );
  /** Nodes whose Ready condition is not True now: outside every budget. */
  const notReady = new Set<string>();
  const budgetOf = (s: SetUnderTest) => {
    const desired = zoneNodes.get(s.zone)!.length;
    return {
      unavailable: Math.ceil(desired * s.maxUnavailable),
      surge: Math.ceil(desired * s.maxSurge),
    };
  };
  const measure = (s: SetUnderTest) => {
    const live = [...podsOf.get(s.name)!.values()].filter((p) => !p.terminating);
    const perNode = new Map<string, SeenPod[]>();
    for (const p of live.filter((p) => p.node !== "")) {
      perNode.set(p.node, [...(perNode.get(p.node) ?? []), p]);
    }
    const w = worst.get(s.name)!;
    w.onOneNode = Math.max(w.onOneNode, ...[...perNode.values()].map((pods) => pods.length));
    // Surge, as upstream counts it: nodes whose second pod is not available yet. Once it is,
    // the old pod's deletion is what remains (and may be retried under faults).
    const surged = [...perNode.values()].filter((pods) =>
      pods.length > 1 && pods.some((p) => !p.ready)
    );
    w.surged = Math.max(w.surged, surged.length);
    if (!armed.has(s.name)) return;
    const available = new Set(live.filter((p) => p.ready).map((p) => p.node));
    const nodes = zoneNodes.get(s.zone)!;
    const unavailable = nodes.filter((n) => !available.has(n) && !notReady.has(n)).length;
    w.unavailable = Math.max(w.unavailable, unavailable);
    w.notReadyNodes = Math.max(w.notReadyNodes, nodes.filter((n) => notReady.has(n)).length);
  };
  const unsubscribe = sim.store.subscribe((event) => {
    if (event.resource === "nodes") {
      const node = event.object as any;
      const ready = (node.status?.conditions ?? []).some((c: any) =>
        c.type === "Ready" && c.status === "True"
      );
      if (ready && event.type !== "DELETED") notReady.delete(node.metadata.name);
      else notReady.add(node.metadata.name);
      return;
    }
    if (event.resource !== "pods") return;
    const pod = event.object as any;
    const set = sets.find((s) => s.name === pod.metadata.labels?.app);
    if (!set) return;
    const pods = podsOf.get(set.name)!;
    if (event.type === "DELETED") pods.delete(pod.metadata.uid);
    else {
      pods.set(pod.metadata.uid, seenPod(pod));
    }
    measure(set);
  });

  /** Every node of the set's zone has exactly one live, ready pod running `image`. */
  const converged = (s: SetUnderTest, image: string) => {
    const pods = [...podsOf.get(s.name)!.values()];
    const nodes = zoneNodes.get(s.zone)!;
    return pods.length === nodes.length &&
      pods.every((p) => !p.terminating && p.ready && p.image === image) &&
      new Set(pods.map((p) => p.node)).size === nodes.length;
  };
  const untilConverged = async (s: SetUnderTest, image: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!converged(s, image)) {
      if (Date.now() > deadline) {
        const pods = [...podsOf.get(s.name)!.values()];
        throw new Error(
          `${s.name} did not converge on ${image} in ${timeoutMs / 1000} s: ${pods.length} pods, ` +
            `${
              pods.filter((p) => p.image === image && p.ready && !p.terminating).length
            } ready on it`,
        );
      }
      await sleep(200);
    }
  };

  /** Each set's written status, read where its kind keeps it, as the controller reads it. */
  const nextCheckAts = async () => {
    const asked: string[] = [];
    for (const s of sets) {
      const set = await api("GET", `${collection(s)}/${s.name}`);
      const rolloutStatus = s.kind === "daemonsets"
        ? await api("GET", `${rolloutStatusCollection}/${s.name}`)
        : undefined;
      const status = writtenStatus(s.kind, { set, rolloutStatus }) as
        | { nextCheckAt?: string }
        | undefined;
      if (status?.nextCheckAt) asked.push(`${s.name}: ${status.nextCheckAt}`);
    }
    return asked;
  };
  const untilNothingAwaited = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (let asked = await nextCheckAts(); asked.length > 0; asked = await nextCheckAts()) {
      if (Date.now() > deadline) {
        throw new Error(`still waited for after ${timeoutMs / 1000} s: ${asked.join(", ")}`);
      }
      await sleep(1_000);
    }
  };

  // Requests and what they were answered.
  const valid = new Map<string, number>();
  const fuzzed = new Map<string, Map<number, number>>();
  const count = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

  const rss = { serve0: [] as number[], relay0: [] as number[], relay1: [] as number[] };
  let restarts = 0;
  const rollouts: { set: string; seconds: number }[] = [];
  let writesAtRest = -1;

  try {
    for (const crd of edgerollCrds()) {
      sim.store.create("customresourcedefinitions.apiextensions.k8s.io", crd as never);
    }
    for (const port of ports) {
      const child = serve(port);
      replicas.push(child);
      await untilAnswers(`http://127.0.0.1:${port}/readyz`, child);
    }
    for (const url of urls) {
      relays.push(
        spawnMain([
          "relay",
          `--target=${url}`,
          `--kubeconfig=${sim.kubeconfigPath}`,
          `--token-file=${tokenFile}`,
        ], imageEnv()),
      );
    }
    const images = new Map(sets.map((s) => [s.name, 1]));
    for (const s of sets) await api("POST", collection(s), s.body(`soak:1`));
    for (const s of sets) {
      await untilConverged(s, "soak:1", 180_000);
      armed.add(s.name);
      measure(s);
    }

    // Faults from now on; the watch cut moves within 10–30 s, the history compacted every 90 s.
    let faultRound = 0;
    const faults = async (on: boolean) => {
      const writes = ["create", "update", "patch", "delete"].map((verb) => ({
        verb,
        code: pick([500, 503]),
        rate: 0.1,
      }));
      await api(
        "PUT",
        "/sim/v1/faults",
        on
          ? {
            errors: [...writes, { verb: "*", code: 429, rate: 0.05 }],
            latencyMs: 20,
            watchDropSeconds: 10 + Math.floor(Math.random() * 21),
            compact: faultRound++ % 3 === 2,
            seed: faultRound,
          }
          : {},
      );
    };
    await faults(true);
    background.push((async () => {
      while (running) {
        await sleep(30_000);
        if (running) await faults(true);
      }
    })());

    // The fuzzer: 20 bad requests a second, spread over both replicas.
    const bad: Record<string, () => RequestInit & { path: string }> = {
      "4 MiB body": () => ({
        path: "/events",
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "x".repeat(4 * 1024 * 1024),
      }),
      "1,001 events": () => ({
        path: "/events",
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/cloudevents-batch+json",
        },
        body: JSON.stringify(Array.from({ length: 1001 }, (_, i) => ({
          specversion: "1.0",
          id: String(i),
          source: "fuzz",
          type: "dev.knative.apiserver.resource.update",
          data: { kind: "Node", apiVersion: "v1", metadata: { name: `fuzz-${i}` } },
        }))),
      }),
      "malformed event": () => ({
        path: "/events",
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/cloudevents+json",
        },
        body: crypto.getRandomValues(new Uint8Array(256)).join(","),
      }),
      "wrong token": () => ({
        path: `/reconcile/advanceddaemonsets/default/${pick(sets).name}`,
        method: "POST",
        headers: { authorization: `Bearer ${crypto.randomUUID()}` },
      }),
      "no token": () => ({ path: "/tick", method: "POST" }),
      "20 KiB header": () => ({
        path: "/tick",
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "x-fuzz": "x".repeat(20 * 1024) },
      }),
      "bad kind": () => ({
        path: "/reconcile/statefulsets/default/x",
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      }),
    };
    const send = async (target: string, init: RequestInit & { path: string }) => {
      try {
        const response = await fetch(`${target}${init.path}`, init);
        await response.body?.cancel();
        return response.status;
      } catch {
        return undefined; // the replica is down between a kill and its restart
      }
    };
    background.push((async () => {
      const names = Object.keys(bad);
      for (let i = 0; running; i++) {
        const name = names[i % names.length];
        const status = await send(pick(urls), bad[name]());
        if (status) count(fuzzed.get(name) ?? fuzzed.set(name, new Map()).get(name)!, status);
        await sleep(50);
      }
    })());

    // Valid calls: a reconcile of some set every second, on either replica.
    background.push((async () => {
      while (running) {
        const s = pick(sets);
        try {
          const response = await fetch(`${pick(urls)}/reconcile/${s.kind}/default/${s.name}`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}` },
          });
          const body = await response.json();
          const reason = response.status >= 500 ? ` ${body.error?.reason}` : "";
          count(valid, `${response.status}${reason}`);
        } catch {
          count(valid, "unreachable");
        }
        await sleep(1000);
      }
    })());

    // Resident memory every 5 s; the second replica is killed and started again.
    background.push((async () => {
      while (running) {
        const sample = (into: number[], pid: number) => {
          const mib = residentMiB(pid); // undefined between a kill and the restart
          if (mib !== undefined) into.push(mib);
        };
        sample(rss.serve0, replicas[0].pid);
        sample(rss.relay0, relays[0].pid);
        sample(rss.relay1, relays[1].pid);
        await sleep(5000);
      }
    })());
    background.push((async () => {
      let last = Date.now();
      while (running) {
        await sleep(1000);
        if (!running || Date.now() - last < restartEveryMs) continue;
        last = Date.now();
        replicas[1].kill("SIGKILL");
        await replicas[1].status;
        replicas[1] = serve(ports[1]);
        restarts++;
      }
    })());

    // Rollouts back to back, one set after the other, until the time is up. One is started only
    // if its set's last rollout would still end in time: a rollout begun in the last seconds ran
    // past the phase by as long as it took (80 s in a CI of 2026-11-29), and the stage with it.
    const endAt = Date.now() + minutes * 60_000;
    const lastSeconds = new Map<string, number>();
    for (let i = 0; Date.now() < endAt; i++) {
      const s = sets[i % sets.length];
      if (Date.now() + (lastSeconds.get(s.name) ?? 0) * 1000 > endAt) break;
      const image = `soak:${images.get(s.name)! + 1}`;
      images.set(s.name, images.get(s.name)! + 1);
      const started = performance.now();
      await api("PATCH", `${collection(s)}/${s.name}`, {
        spec: { template: template(s.name, s.zone, image) },
      });
      await untilConverged(s, image, 240_000);
      const seconds = (performance.now() - started) / 1000;
      rollouts.push({ set: s.name, seconds });
      lastSeconds.set(s.name, seconds);
    }

    running = false;
    await Promise.all(background);
    await faults(false);
    await untilAnswers(`${urls[1]}/readyz`, replicas[1]);
    // At rest: first nothing waited for (no set's written status holds a `nextCheckAt`: an
    // expectation left by a fault until its deadline, a poll), as the trigger scenarios' quiet
    // window proves it (ADR 0037); a blind settle let such a deadline land inside the minute.
    // Then a minute of ticks (every 5 s on both replicas) writes nothing.
    await untilNothingAwaited(180_000);
    await sleep(3_000);
    const writes = async () => {
      const { requests } = await api("GET", "/sim/v1/stats");
      return ["create", "update", "patch", "delete"]
        .reduce((n, verb) => n + (requests.byVerb[verb] ?? 0), 0);
    };
    const before = await writes();
    await sleep(60_000);
    writesAtRest = await writes() - before;
  } finally {
    running = false;
    await Promise.allSettled(background);
    unsubscribe();
    await stop([...relays, ...replicas]);
    await sim.stop();
    await Deno.remove(dir, { recursive: true });
  }

  // The figures, then the verdicts.
  const thirds = (xs: number[]) => {
    const third = Math.max(1, Math.floor(xs.length / 3));
    return { first: mean(xs.slice(0, third)), last: mean(xs.slice(-third)), max: Math.max(...xs) };
  };
  console.log(`\nsoak: ${nodeCount} nodes, ${minutes} min, ${restarts} restarts of replica 2\n`);
  console.log(markdownTable(
    [
      "set",
      "rollouts",
      "slowest",
      "budget (unavailable / surge)",
      "worst unavailable (Ready nodes)",
      "worst NotReady nodes",
      "worst nodes surged",
      "most pods on a node",
    ],
    sets.map((s) => {
      const mine = rollouts.filter((r) => r.set === s.name).map((r) => r.seconds);
      const w = worst.get(s.name)!;
      const b = budgetOf(s);
      return [
        s.name,
        String(mine.length),
        `${Math.max(0, ...mine).toFixed(0)} s`,
        `${b.unavailable} / ${b.surge}`,
        String(w.unavailable),
        String(w.notReadyNodes),
        String(w.surged),
        String(w.onOneNode),
      ];
    }),
  ));
  console.log();
  console.log(markdownTable(
    ["process", "RSS first third", "RSS last third", "RSS max", "limit"],
    Object.entries(rss).map(([name, xs]) => {
      const t = thirds(xs);
      const limit = name.startsWith("serve") ? limitMiB.serve : limitMiB.relay;
      return [
        name,
        `${t.first.toFixed(0)} MiB`,
        `${t.last.toFixed(0)} MiB`,
        `${t.max.toFixed(0)} MiB`,
        `${limit} MiB`,
      ];
    }),
  ));
  console.log();
  console.log(markdownTable(
    ["request", "answers"],
    [
      ["valid reconciles", [...valid].map(([k, n]) => `${k}: ${n}`).join(", ")],
      ...[...fuzzed].map((
        [name, answers],
      ) => [name, [...answers].map(([k, n]) => `${k}: ${n}`).join(", ")]),
    ],
  ));
  console.log(`\ncontroller writes in a minute at rest: ${writesAtRest}\n`);

  for (const s of sets) {
    const w = worst.get(s.name)!;
    const b = budgetOf(s);
    assertEquals(
      w.unavailable <= b.unavailable,
      true,
      `${s.name}: ${w.unavailable} Ready nodes unavailable at once, budget ${b.unavailable}`,
    );
    assertEquals(
      w.surged <= b.surge,
      true,
      `${s.name}: ${w.surged} nodes with two pods, surge ${b.surge}`,
    );
    assertEquals(
      w.onOneNode <= (b.surge > 0 ? 2 : 1),
      true,
      `${s.name}: ${w.onOneNode} live pods on one node`,
    );
    assertEquals(
      rollouts.some((r) => r.set === s.name),
      true,
      `${s.name} rolled out at least once`,
    );
  }
  assertEquals(writesAtRest, 0, "writes at rest");
  assertEquals(
    [...valid.keys()].filter((k) => k.startsWith("500")),
    [],
    "no 500 to a valid request",
  );
  for (const [name, answers] of fuzzed) {
    const wrong = [...answers.keys()].filter((status) => status < 400 || status >= 500);
    assertEquals(wrong, [], `${name} answered only 4xx`);
  }
  assertEquals(restarts >= 1, true, "replica 2 was killed and restarted");
  for (const [name, xs] of Object.entries(rss)) {
    const t = thirds(xs);
    const limit = name.startsWith("serve") ? limitMiB.serve : limitMiB.relay;
    assertEquals(t.max <= limit, true, `${name}: ${t.max.toFixed(0)} MiB, limit ${limit}`);
    assertEquals(
      t.last <= t.first * 1.25 + 16,
      true,
      `${name} grew: ${t.first.toFixed(0)} → ${t.last.toFixed(0)} MiB`,
    );
  }
});
