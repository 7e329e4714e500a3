/**
 * `deno task kruise-manager:smoke [--nodes N]`: kruise-manager (cluster/kruise-manager.ts) rolls
 * a Kruise DaemonSet on cluster/'s control plane, end to end. Exits 0 once it has, 1 otherwise.
 *
 * Starts a cluster of N kwok nodes (default 5); installs edgeroll's own CRD for Kruise's DaemonSet
 * first, as the kruise-compat overlay would (ADR 0027), so that kruise-manager has to replace it;
 * starts kruise-manager; creates an `apps.kruise.io/v1alpha1` DaemonSet (RollingUpdate, Standard,
 * maxUnavailable 1); waits for a Ready pod on every node; changes its image and waits for the
 * rollout to complete: `updatedNumberScheduled` and `numberAvailable` equal to
 * `desiredNumberScheduled`, one Ready pod with the new image on every node. The DaemonSet is read
 * as v1alpha1, so through kruise-manager's conversion webhook. Everything started is stopped by
 * PID at the end, on failure and on SIGINT or SIGTERM too. kruise-manager's log stays in
 * .cache/kruise-manager/.
 */
import { parseArgs } from "node:util";
import { type ClusterState, defaultStatePath, stopCluster, upCluster } from "./control-plane.ts";
import { kubectl, kubectlJson } from "./kubectl.ts";
import {
  clientRequests,
  type KruiseManager,
  kruiseManagerUser,
  startKruiseManager,
} from "./kruise-manager.ts";
import { logTail, sleep } from "./processes.ts";

const repo = new URL("..", import.meta.url).pathname;
const logDir = `${repo}.cache/kruise-manager`;
const logPath = `${logDir}/kruise-manager.log`;
/** What the kruise-compat overlay installs: `deno task crd`'s CRD, conversion through edgeroll. */
const edgerollCrdPath = `${repo}manifests/crd/kruise/daemonsets.apps.kruise.io.yaml`;
const name = "kruise-smoke";
const set = `daemonsets.v1alpha1.apps.kruise.io/${name}`;

const started = performance.now();
const seconds = () => Math.round((performance.now() - started) / 100) / 10;
function say(event: Record<string, unknown>): void {
  console.log(JSON.stringify({ t: seconds(), ...event }));
}

interface KruiseDaemonSet {
  metadata: { generation: number };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    updatedNumberScheduled?: number;
    daemonSetHash?: string;
  };
}

interface PodList {
  items: {
    metadata: { name: string; ownerReferences?: { apiVersion: string; kind: string }[] };
    spec: { nodeName?: string; containers: { image: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

function daemonSet(image: string): Record<string, unknown> {
  return {
    apiVersion: "apps.kruise.io/v1alpha1",
    kind: "DaemonSet",
    metadata: { name, namespace: "default" },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "agent", image }] },
      },
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { rollingUpdateType: "Standard", maxUnavailable: 1 },
      },
    },
  };
}

/**
 * What is true of the set and its pods now, or why not: every node runs one Ready pod of
 * `image`, and the status (read as v1alpha1) counts them all updated and available.
 */
async function rolledOut(
  state: ClusterState,
  image: string,
): Promise<{ done: true; hash: string } | { done: false; why: string }> {
  const ds = await kubectlJson<KruiseDaemonSet>(state.kubeconfigPath, ["get", set]);
  const pods = await kubectlJson<PodList>(state.kubeconfigPath, [
    "get",
    "pods",
    "--namespace=default",
    `--selector=app=${name}`,
  ]);
  const nodes = state.nodes.length;
  const ready = pods.items.filter((p) =>
    p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  );
  const current = ready.filter((p) => p.spec.containers[0].image === image);
  const coveredNodes = new Set(current.map((p) => p.spec.nodeName));
  const s = ds.status ?? {};
  const wrong = [
    [s.observedGeneration === ds.metadata.generation, "generation not observed"],
    [s.desiredNumberScheduled === nodes, `desiredNumberScheduled ${s.desiredNumberScheduled}`],
    [s.updatedNumberScheduled === nodes, `updatedNumberScheduled ${s.updatedNumberScheduled}`],
    [s.numberAvailable === nodes, `numberAvailable ${s.numberAvailable}`],
    [s.numberReady === nodes, `numberReady ${s.numberReady}`],
    [pods.items.length === nodes, `${pods.items.length} pods`],
    [
      state.nodes.every((n) => coveredNodes.has(n)),
      `Ready with ${image} on ${coveredNodes.size} of ${nodes} nodes`,
    ],
  ].filter(([ok]) => !ok).map(([, why]) => why as string);
  if (wrong.length > 0) return { done: false, why: wrong.join(", ") };
  const owners = pods.items.flatMap((p) => p.metadata.ownerReferences ?? [])
    .filter((o) => o.kind === "DaemonSet").map((o) => o.apiVersion);
  if (!owners.every((v) => v.startsWith("apps.kruise.io/")) || owners.length !== nodes) {
    throw new Error(`pods not owned by the Kruise DaemonSet: ${JSON.stringify(owners)}`);
  }
  return { done: true, hash: s.daemonSetHash ?? "(none)" };
}

async function untilRolledOut(state: ClusterState, image: string, timeoutMs = 180_000) {
  const from = performance.now();
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (true) {
    const now = await rolledOut(state, image);
    if (now.done) {
      return { seconds: Math.round((performance.now() - from) / 100) / 10, hash: now.hash };
    }
    if (now.why !== last) say({ msg: "waiting", image, for: now.why });
    last = now.why;
    if (Date.now() > deadline) {
      throw new Error(`${image} not rolled out after ${timeoutMs / 1000}s: ${now.why}`);
    }
    await sleep(500);
  }
}

/**
 * Every `status.numberUnavailable` kruise-manager writes while `body` runs, from a watch of the
 * set (each status write is one event), so that no write between two polls is missed.
 */
async function unavailableDuring(
  state: ClusterState,
  body: () => Promise<void>,
): Promise<number[]> {
  const watch = new Deno.Command(Deno.env.get("KUBECTL") ?? "kubectl", {
    args: [
      "--kubeconfig",
      state.kubeconfigPath,
      "get",
      set,
      "--watch",
      '--output=jsonpath={.status.numberUnavailable}{"\\n"}',
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const first = Promise.withResolvers<void>();
  const reading = (async () => {
    let buffered = "";
    for await (const chunk of watch.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const complete = buffered.split("\n");
      buffered = complete.pop() ?? "";
      lines.push(...complete);
      if (lines.length > 0) first.resolve();
    }
    first.reject(new Error("the watch of the DaemonSet ended before its first event"));
  })();
  try {
    await first.promise; // the set as it is: the watch runs
    await body();
    await sleep(1000); // the events of the last writes
  } finally {
    watch.kill("SIGTERM");
    await watch.status;
    await reading.catch(() => {});
  }
  return lines.map((l) => Number(l.trim() || 0));
}

async function main(nodes: number): Promise<void> {
  await Deno.mkdir(logDir, { recursive: true });
  await Deno.writeTextFile(logPath, "");
  let state: ClusterState | undefined;
  let manager: KruiseManager | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    stopping ??= (async () => {
      await manager?.stop();
      if (state) await stopCluster(state);
      await Deno.remove(defaultStatePath).catch(() => {});
    })();
  const onSignal = async () => {
    say({ msg: "interrupted: stopping what was started" });
    await stopAll();
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const cluster = state = await upCluster({
      nodes,
      log: (e) => e.msg === "nodes created" && say(e),
    });
    const admin = cluster.kubeconfigPath;
    say({ msg: "cluster ready", nodes });

    await kubectl(admin, ["create", "-f", edgerollCrdPath]);
    manager = await startKruiseManager(cluster, { logPath });
    say({
      msg: "kruise-manager running",
      pid: manager.pid,
      startup: manager.startup,
      command: [`${manager.process.binary}`, ...manager.args].join(" "),
      env: manager.env,
    });

    const whoami = await kubectlJson<{ status: { userInfo: { username: string } } }>(
      manager.kubeconfigPath,
      ["auth", "whoami"],
    );
    if (whoami.status.userInfo.username !== kruiseManagerUser) {
      throw new Error(`kruise-manager acts as ${whoami.status.userInfo.username}`);
    }
    const crd = await kubectlJson<{
      metadata: { annotations?: Record<string, string> };
      spec: { conversion?: { webhook?: { clientConfig?: { url?: string; caBundle?: string } } } };
    }>(admin, ["get", "crd", "daemonsets.apps.kruise.io"]);
    const conversion = crd.spec.conversion?.webhook?.clientConfig;
    if (
      !crd.metadata.annotations?.["controller-gen.kubebuilder.io/version"] ||
      !conversion?.url?.startsWith("https://127.0.0.1:") || !conversion.caBundle
    ) {
      throw new Error(`the DaemonSet CRD is not Kruise's, converted by kruise-manager`);
    }
    say({ msg: "Kruise's CRD replaced edgeroll's", conversion: conversion.url });

    const requestsBefore = clientRequests(await (await fetch(manager.metricsUrl)).text());
    await kubectl(admin, ["create", "-f", "-"], JSON.stringify(daemonSet("example.com/agent:v1")));
    const created = await untilRolledOut(cluster, "example.com/agent:v1");
    say({ msg: "a Ready pod on every node", ...created });

    let rolled: Awaited<ReturnType<typeof untilRolledOut>> | undefined;
    const unavailable = await unavailableDuring(cluster, async () => {
      await kubectl(admin, [
        "patch",
        set,
        "--type=json",
        `--patch=${
          JSON.stringify([{
            op: "replace",
            path: "/spec/template/spec/containers/0/image",
            value: "example.com/agent:v2",
          }])
        }`,
      ]);
      rolled = await untilRolledOut(cluster, "example.com/agent:v2");
    });
    const maxUnavailable = Math.max(...unavailable);
    say({
      msg: "rolled out",
      ...rolled,
      statusEvents: unavailable.length - 1,
      maxNumberUnavailable: maxUnavailable,
      // Every request kruise-manager sent from the creation to here (client-go's count).
      requests: clientRequests(await (await fetch(manager.metricsUrl)).text()) - requestsBefore,
    });
    if (maxUnavailable > 1) {
      throw new Error(`numberUnavailable reached ${maxUnavailable}, with maxUnavailable 1`);
    }
    if (rolled?.hash === created.hash) throw new Error(`daemonSetHash still ${rolled?.hash}`);
    say({ msg: "kruise-manager smoke passed", nodes, seconds: seconds() });
  } catch (err) {
    say({ msg: "kruise-manager smoke FAILED", error: String(err) });
    console.error(`--- kruise-manager's log (${logPath}) ends:\n${logTail(logPath, 30)}`);
    throw err;
  } finally {
    await stopAll();
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    say({ msg: "stopped kruise-manager and the cluster" });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ args: Deno.args, options: { nodes: { type: "string" } } });
  const nodes = Number(values.nodes ?? 5);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 100) {
    console.error("usage: kruise-manager-smoke.ts [--nodes N] (1…100)");
    Deno.exit(2);
  }
  try {
    await main(nodes);
  } catch {
    Deno.exit(1);
  }
}
