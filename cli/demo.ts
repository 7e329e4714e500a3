/**
 * `edgeroll demo`: the whole product in one process on the simulated cluster. A fleet of
 * edge nodes in a few zones, the controller (with its in-process tick), the relay, an
 * AdvancedDaemonSet rolled to a new image while a few nodes lose their link and come back;
 * then a summary table. With `--bad-image`, then a version that crash-loops: the rollout stops
 * itself within its failure budget and rolls back (ADR 0035), and the table says how many nodes
 * ever ran the bad version.
 *
 * It drives the rooms exactly as a user deploys them: the relay watches through the API
 * server and posts CloudEvents to the controller over HTTP; nothing here plans or acts.
 */
import { eventually } from "../lib/eventually.ts";
import { parse as parseYaml } from "yaml";
import { type Command, intOption } from "../lib/command.ts";
import { createLogger } from "../lib/log.ts";
import { startSim } from "../sim/start.ts";
import type { StoreEvent } from "../sim/store.ts";
import { startController } from "./serve.ts";
import { staticTokenAuthenticator } from "../routes/auth.ts";
import { startRelay } from "../relay/relay.ts";
import { edgerollCrdFileNames } from "./crd-command.ts";
import { loadKubeConfig } from "../kube/config.ts";
import { KubeError } from "../kube/errors.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { type UserCalls, userCalls } from "../kube/user-calls.ts";

const NAMESPACE = "default";
const SET = "edge-agent";
const REVISION_LABEL = "controller-revision-hash";

export interface DemoOptions {
  nodes: number;
  zones: number;
  speed: number;
  maxUnavailable: number;
  disconnect: number;
  /** After the rollout, roll to an image that crash-loops, which stops and rolls back. */
  badImage?: boolean;
  out: ProgressOutput;
}

/** What the bad image's rollout came to. */
export interface BadImageSummary {
  image: string;
  stoppedBecause: string;
  failedPods: number;
  /** Nodes that ever ran a pod of the bad version. */
  nodesThatRanIt: number;
  rolledBackTo: string;
  /** From the bad image to every node on the good one again. */
  seconds: number;
  onGoodImageAtEnd: number;
}

export interface DemoSummary {
  nodes: number;
  maxUnavailable: number;
  rolloutSeconds: number;
  /** Old pods the controller deleted to replace them. */
  replaced: number;
  minimumWaves: number;
  medianPodStartSeconds: number;
  idealSeconds: number;
  apiRequests: number;
  apiWrites: number;
  disconnected: string[];
  updatedAtEnd: number;
  badImage?: BadImageSummary;
}

/** A progress line that is redrawn, and notes that stay. */
export interface ProgressOutput {
  progress(line: string): void;
  note(line: string): void;
}

/**
 * On a terminal the progress line is redrawn in place; elsewhere (CI logs, pipes) each
 * distinct progress line is printed once.
 */
export function consoleOutput(interactive: boolean): ProgressOutput {
  let previous = "";
  let open = false;
  return {
    progress(line) {
      if (line === previous) return;
      previous = line;
      if (!interactive) return console.log(line);
      Deno.stdout.writeSync(new TextEncoder().encode(`\r\x1b[2K${line}`));
      open = true;
    },
    note(line) {
      console.log(open ? `\n${line}` : line);
      open = false;
    },
  };
}

interface Progress {
  desired: number;
  updated: number;
  available: number;
  unavailable: number;
  conditions: string;
}

function adsManifest(
  image: string,
  maxUnavailable: number,
  badImage: boolean,
): KubeObject {
  // For --bad-image: a budget of one failed pod and a rollback when spent (ADR 0035).
  const failurePolicy = badImage ? { failurePolicy: { maxFailed: 1, rollback: true } } : {};
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: SET, namespace: NAMESPACE },
    spec: {
      selector: { matchLabels: { app: SET } },
      template: {
        metadata: { labels: { app: SET } },
        spec: { containers: [{ name: "agent", image }] },
      },
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { rollingUpdateType: "Standard", maxUnavailable, ...failurePolicy },
      },
    },
  };
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const firstImage = "registry.local/edge-agent:1.0";
const nextImage = "registry.local/edge-agent:1.1";
/** sim crash-loops every image tagged `crash` (cluster/ has a kwok stage for it too). */
const badImage = "registry.local/edge-agent:crash";

export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const stack = await startStack(options);
  try {
    return await rollOut(stack, options);
  } finally {
    await stack.stop();
  }
}

type Sim = Awaited<ReturnType<typeof startSim>>;

/** The rooms as a user runs them: sim, the CRD, the controller and the relay. */
interface DemoStack {
  sim: Sim;
  objects: UserCalls;
  stop(): Promise<void>;
}

async function startStack(options: DemoOptions): Promise<DemoStack> {
  const { nodes, zones, speed } = options;
  const sim = await startSim({ nodes, zones, speed });
  const kubeConfig = loadKubeConfig(sim.kubeconfigPath);
  const objects = userCalls(kubeConfig);
  // The CRDs first, as a user installs them, so the relay's first watch finds the resource.
  try {
    for (const name of edgerollCrdFileNames) {
      const path = new URL(`../manifests/crd/${name}`, import.meta.url);
      await objects.create(parseYaml(await Deno.readTextFile(path)));
    }
  } catch (err) {
    await sim.stop();
    throw err;
  }
  const token = crypto.randomUUID();
  const logger = createLogger({ level: "warn" });
  const controller = startController({
    kubeConfig,
    port: 0,
    hostname: "127.0.0.1",
    auth: () => staticTokenAuthenticator(token),
    tickEveryMs: 1000,
    logger,
  });
  const relay = startRelay({ kubeConfig, target: controller.url, token, logger });
  options.out.note(
    `sim ${sim.url} with ${nodes} nodes in ${zones} zones, ` +
      `controller ${controller.url}, relay watching`,
  );
  return {
    sim,
    objects,
    async stop() {
      await relay.stop();
      await controller.stop();
      await sim.stop();
    },
  };
}

/** The set and its pods as the demo watches them, read from sim's store; draws progress. */
class FleetView {
  constructor(
    private readonly store: Sim["store"],
    private readonly options: DemoOptions,
  ) {}

  progress(): Progress | undefined {
    const set = this.store.tryGet("advanceddaemonsets.apps.edgeroll.dev", NAMESPACE, SET);
    if (!set) return undefined;
    const status = (set.status ?? {}) as Record<string, unknown>;
    // A status written for an older spec says nothing of this one.
    if (status.observedGeneration !== set.metadata.generation) return undefined;
    const conditions = ((status.conditions ?? []) as { type: string; status: string }[])
      .filter((c) => c.status === "True").map((c) => c.type).join(",");
    return {
      desired: Number(status.desiredNumberScheduled ?? 0),
      updated: Number(status.updatedNumberScheduled ?? 0),
      available: Number(status.numberAvailable ?? 0),
      unavailable: Number(status.numberUnavailable ?? 0),
      conditions,
    };
  }

  show(phase: string): Progress | undefined {
    const p = this.progress();
    if (!p) return undefined;
    const width = 30;
    const filled = p.desired ? Math.round((p.updated / p.desired) * width) : 0;
    this.options.out.progress(
      `${phase.padEnd(10)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ` +
        `${p.updated}/${p.desired} updated, ${p.available} available, ` +
        `${p.unavailable} unavailable  ${p.conditions}`,
    );
    return p;
  }

  /** Live pods, those of revision `hash` only when given. */
  livePods(hash?: string) {
    return this.store.list("pods", { namespace: NAMESPACE }).items.filter((pod) =>
      !pod.metadata.deletionTimestamp &&
      (hash === undefined || pod.metadata.labels?.[REVISION_LABEL] === hash)
    );
  }

  /** True once every node runs `image`, available. */
  settled(image: string): true | undefined {
    const p = this.show(image === firstImage ? "create" : "rollout");
    const onImage = this.livePods().filter((pod) =>
      (pod.spec as { containers: { image: string }[] }).containers[0].image === image
    );
    return p && p.desired === this.options.nodes && p.updated === p.desired &&
        p.available === p.desired && onImage.length === p.desired
      ? true
      : undefined;
  }

  /** True once at least `count` nodes are updated. */
  updatedAtLeast(count: (desired: number) => number): true | undefined {
    const p = this.show("rollout");
    return p && p.updated >= count(p.desired) ? true : undefined;
  }
}

/** The rollout as the API server sees it: old pods deleted, how long new pods take to start. */
function recordReplacements(store: Sim["store"], oldHash: string | undefined) {
  const deletions = new Set<string>();
  const created = new Map<string, number>();
  const startDurations: number[] = [];
  const stop = store.subscribe((event: StoreEvent) => {
    if (event.resource !== "pods") return;
    const pod = event.object;
    const name = pod.metadata.name;
    const now = Date.now();
    if (pod.metadata.labels?.[REVISION_LABEL] === oldHash) {
      if (event.type === "DELETED" || pod.metadata.deletionTimestamp) deletions.add(name);
      return;
    }
    if (event.type === "ADDED") created.set(name, now);
    const ready = ((pod.status as { conditions?: { type: string; status: string }[] })
      ?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    if (ready && created.has(name)) {
      startDurations.push(now - created.get(name)!);
      created.delete(name);
    }
  });
  return { deletions, startDurations, stop };
}

/** Creates the set once the relay and sim serve its API (the CRD was just created). */
async function createSet(
  objects: UserCalls,
  maxUnavailable: number,
  badImage: boolean,
) {
  await eventually("the AdvancedDaemonSet API to be served", async () => {
    try {
      await objects.create(adsManifest(firstImage, maxUnavailable, badImage));
      return true;
    } catch (err) {
      if (err instanceof KubeError && err.status === 404) return undefined;
      throw err;
    }
  }, { timeoutMs: 10_000, intervalMs: 100 });
}

async function setImage(
  objects: UserCalls,
  image: string,
  spec: { minReadySeconds?: number } = {},
) {
  await objects.mergePatch({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: SET, namespace: NAMESPACE },
    spec: {
      ...spec,
      template: {
        metadata: { labels: { app: SET } },
        spec: { containers: [{ name: "agent", image }] },
      },
    },
  });
}

async function rollOut(stack: DemoStack, options: DemoOptions): Promise<DemoSummary> {
  const { sim, objects } = stack;
  const view = new FleetView(sim.store, options);
  await createSet(objects, options.maxUnavailable, options.badImage === true);
  const poll = { timeoutMs: 30_000, intervalMs: 100 };
  await eventually("the first version on every node", () => view.settled(firstImage), poll);

  const oldHash = (sim.store.get("advanceddaemonsets.apps.edgeroll.dev", NAMESPACE, SET)
    .status as { daemonSetHash?: string }).daemonSetHash;
  const replacements = recordReplacements(sim.store, oldHash);
  try {
    const before = await requestTotals(sim.url);
    const started = Date.now();
    await setImage(objects, nextImage);

    // Mid-rollout, cut a few nodes that still run the old version off the cloud.
    const third = (desired: number) => Math.ceil(desired / 3);
    await eventually("a third of the fleet to be updated", () => view.updatedAtLeast(third), poll);
    const cut = view.livePods(oldHash).map((pod) => (pod.spec as { nodeName: string }).nodeName)
      .sort().slice(0, options.disconnect);
    for (const node of cut) await admin(sim.url, node, "disconnect");
    options.out.note(`disconnected ${cut.join(", ")}: the rollout goes on without them`);

    const longer = { ...poll, timeoutMs: 45_000 };
    const connected = (desired: number) => desired - cut.length;
    await eventually(
      "every connected node to be updated",
      () => view.updatedAtLeast(connected),
      longer,
    );
    for (const node of cut) await admin(sim.url, node, "reconnect");
    options.out.note(`reconnected ${cut.join(", ")}: they are updated as they come back`);
    await eventually("the rollout to complete", () => view.settled(nextImage), longer);
    const rolloutMs = Date.now() - started;

    const after = await requestTotals(sim.url);
    const podStartMs = median(replacements.startDurations);
    const bad = options.badImage ? await rollBadImage(stack, view, options) : undefined;
    const minimumWaves = Math.ceil((options.nodes - cut.length) / options.maxUnavailable) +
      (cut.length > 0 ? 1 : 0);
    return {
      nodes: options.nodes,
      maxUnavailable: options.maxUnavailable,
      rolloutSeconds: rolloutMs / 1000,
      replaced: replacements.deletions.size,
      minimumWaves,
      medianPodStartSeconds: podStartMs / 1000,
      idealSeconds: (minimumWaves * podStartMs) / 1000,
      apiRequests: after.requests - before.requests,
      apiWrites: after.writes - before.writes,
      disconnected: cut,
      updatedAtEnd: view.progress()?.updated ?? 0,
      ...(bad ? { badImage: bad } : {}),
    };
  } finally {
    replacements.stop();
  }
}

/**
 * The bad version: rolled out, it crash-loops; the rollout stops within its budget and puts the
 * last good template back, whose pods replace the crashing ones.
 */
async function rollBadImage(
  stack: DemoStack,
  view: FleetView,
  options: DemoOptions,
): Promise<BadImageSummary> {
  const { sim, objects } = stack;
  const ranIt = new Set<string>();
  const stop = sim.store.subscribe((event: StoreEvent) => {
    if (event.resource !== "pods" || event.type === "DELETED") return;
    const spec = event.object.spec as { nodeName?: string; containers: { image: string }[] };
    if (spec.containers[0].image === badImage && spec.nodeName) ranIt.add(spec.nodeName);
  });
  try {
    const started = Date.now();
    // The few seconds a new pod must stay Ready, so a crashing one is judged before the next
    // wave (ADR 0035): set only now, so the rollout before keeps its pace, and waited for, as
    // pods Ready for less count as unavailable and would be replaced outside the budget.
    await setImage(objects, nextImage, { minReadySeconds: 3 });
    await eventually("1.1 available for minReadySeconds", () => view.settled(nextImage), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await setImage(objects, badImage);
    options.out.note(`rolling out ${badImage}, which crash-loops`);
    const status = () =>
      sim.store.get("advanceddaemonsets.apps.edgeroll.dev", NAMESPACE, SET).status as {
        rolloutStop?: { reason: string; pods: unknown[] };
        rollback?: { to: string; reason: string };
      };
    const poll = { timeoutMs: 60_000, intervalMs: 100 };
    // The stop is the bad revision's: once rolled back, the status no longer shows it.
    let failed = 0;
    const rolledBack = await eventually("the rollout to stop and roll back", () => {
      view.show("bad image");
      failed = Math.max(failed, status().rolloutStop?.pods.length ?? 0);
      return status().rollback;
    }, { ...poll, intervalMs: 20 });
    options.out.note(
      `stopped (${rolledBack.reason}) with ${failed} failed pods: rolled back to ${rolledBack.to}`,
    );
    await eventually("every node on the good version again", () => view.settled(nextImage), poll);
    const onGood = view.livePods().filter((pod) =>
      (pod.spec as { containers: { image: string }[] }).containers[0].image === nextImage
    ).length;
    return {
      image: badImage,
      stoppedBecause: rolledBack.reason,
      failedPods: failed,
      nodesThatRanIt: ranIt.size,
      rolledBackTo: rolledBack.to,
      seconds: (Date.now() - started) / 1000,
      onGoodImageAtEnd: onGood,
    };
  } finally {
    stop();
  }
}

async function admin(simUrl: string, node: string, verb: string): Promise<void> {
  const response = await fetch(`${simUrl}/sim/v1/nodes/${node}/${verb}`, { method: "POST" });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`sim ${verb} ${node}: HTTP ${response.status}`);
}

const WRITE_VERBS = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/** Requests that reached the API server over HTTP: edgeroll's, not the simulated kubelets'. */
async function requestTotals(simUrl: string): Promise<{ requests: number; writes: number }> {
  const stats = await (await fetch(`${simUrl}/sim/v1/stats`)).json() as {
    requests: { byVerb: Record<string, number> };
  };
  let requests = 0;
  let writes = 0;
  for (const [verb, count] of Object.entries(stats.requests.byVerb)) {
    requests += count;
    if (WRITE_VERBS.has(verb)) writes += count;
  }
  return { requests, writes };
}

export function summaryTable(s: DemoSummary): string {
  const rows: [string, string][] = [
    ["nodes", String(s.nodes)],
    ["maxUnavailable", String(s.maxUnavailable)],
    ["disconnected mid-rollout", s.disconnected.join(", ") || "none"],
    ["updated at the end", `${s.updatedAtEnd}/${s.nodes}`],
    ["rollout time", `${s.rolloutSeconds.toFixed(1)} s`],
    ["old pods replaced", String(s.replaced)],
    ["waves (nodes / maxUnavailable, +1 after reconnect)", String(s.minimumWaves)],
    ["median pod start", `${s.medianPodStartSeconds.toFixed(2)} s`],
    ["ideal time (waves x pod start)", `${s.idealSeconds.toFixed(1)} s`],
    ["edgeroll's API requests during rollout", `${s.apiRequests} (${s.apiWrites} writes)`],
    ...(s.badImage
      ? [
        ["bad image", s.badImage.image],
        ["stopped because", `${s.badImage.stoppedBecause}, ${s.badImage.failedPods} pods failed`],
        ["nodes that ever ran the bad version", `${s.badImage.nodesThatRanIt}/${s.nodes}`],
        ["rolled back to revision", s.badImage.rolledBackTo],
        ["bad image to every node back on 1.1", `${s.badImage.seconds.toFixed(1)} s`],
        ["on the good version at the end", `${s.badImage.onGoodImageAtEnd}/${s.nodes}`],
      ] as [string, string][]
      : []),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `| ${k.padEnd(width)} | ${v}`).join("\n");
}

export const demoCommand: Command = {
  name: "demo",
  summary: "Roll an AdvancedDaemonSet across a simulated edge fleet, with nodes cut off mid-way.",
  usage:
    "[--nodes 60] [--zones 3] [--speed 20] [--max-unavailable 6] [--disconnect 3] [--bad-image]",
  options: {
    "bad-image": { type: "boolean" },
    nodes: { type: "string" },
    zones: { type: "string" },
    speed: { type: "string" },
    "max-unavailable": { type: "string" },
    disconnect: { type: "string" },
  },
  help: {
    nodes: "simulated edge nodes (default 60)",
    zones: "zones they are spread over (default 3)",
    speed: "simulated time runs this many times faster than real time (default 20)",
    "max-unavailable": "the rollout's budget of unavailable pods (default 6)",
    disconnect: "nodes cut off mid-rollout and reconnected later (default 3)",
    "bad-image":
      "then roll out an image that crash-loops: the rollout stops within its failure budget and rolls back",
  },
  async run(args) {
    const out = consoleOutput(Deno.stdout.isTerminal());
    const summary = await runDemo({
      nodes: intOption(args, "nodes", 60, { min: 1, max: 5000 }),
      zones: intOption(args, "zones", 3, { min: 1, max: 100 }),
      speed: intOption(args, "speed", 20, { min: 1, max: 1000 }),
      maxUnavailable: intOption(args, "max-unavailable", 6, { min: 1 }),
      disconnect: intOption(args, "disconnect", 3, { min: 0 }),
      badImage: args.values["bad-image"] === true,
      out,
    });
    out.note(summaryTable(summary));
    const onGood = summary.badImage?.onGoodImageAtEnd ?? summary.updatedAtEnd;
    return summary.updatedAtEnd === summary.nodes && onGood === summary.nodes ? 0 : 1;
  },
};
