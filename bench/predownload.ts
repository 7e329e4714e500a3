/**
 * Kruise's image pre-download where the pull dominates (issue 18): a 1,000-node fleet on the
 * simulator whose image pull takes 30 s and start 2 s (simulated), rolled from agent:1 to
 * agent:2 by `serve` and `relay` in their own processes, with 10% maxUnavailable:
 * - without pre-download: the image changes and the rollout pulls wave by wave;
 * - with it: the set is paused on agent:2 with `image-predownload-parallelism`, every node pulls
 *   (the pull phase, when no pod may be unavailable), then it is resumed: the rollout proper
 *   starts its pods from images already on the nodes;
 * - with a maintenance window (ADR 0054) instead of the pause: agent:2 is written while the window
 *   is closed, every node pulls, then the window opens (written open from now): the rollout
 *   proper is what the window must hold.
 * Prints one table; never fails. Goal: the rollout proper at least 50% shorter.
 *
 *   deno run -A bench/predownload.ts [--nodes 1000] [--speed 10] [--parallelism 100]
 */
import * as k8s from "@kubernetes/client-node";
import { parseArgs } from "node:util";
import {
  adsResource,
  agentSet,
  createAgentSet,
  setAgentImage,
} from "../tests/controller-on-sim.ts";
import { type SimProcess, withEdgeroll, withSimProcess } from "../tests/processes.ts";
import { markdownTable } from "./markdown-table.ts";
import { getJson, installEdgerollCrds, untilRolledOut } from "./sim-rollout.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    nodes: { type: "string" },
    speed: { type: "string" },
    parallelism: { type: "string" },
  },
  strict: true,
});
const nodes = Number(flags.nodes ?? 1000);
const speed = Number(flags.speed ?? 10);
const parallelism = Number(flags.parallelism ?? Math.ceil(nodes / 10));
const pullSeconds = 30;
const startSeconds = 2;
const timeoutMs = 1_800_000;

interface SetRead {
  status?: {
    numberUnavailable?: number;
    imagePreDownload?: { nodes: number; pulled: number; pulling: number; failed: number };
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

const setUrl = (sim: SimProcess) =>
  `${sim.url}/apis/${adsResource.group}/${adsResource.version}/namespaces/default/${adsResource.plural}/agent`;

async function mergePatchSet(kc: k8s.KubeConfig, body: unknown): Promise<void> {
  await kc.makeApiClient(k8s.CustomObjectsApi).patchNamespacedCustomObject(
    { ...adsResource, namespace: "default", name: "agent", body },
    k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
  );
}

/** Ready pods of the agent, read from the pods themselves. */
async function readyPods(sim: SimProcess): Promise<number> {
  const { items } = await getJson<
    { items: { status?: { conditions?: { type: string; status: string }[] } }[] }
  >(`${sim.url}/api/v1/namespaces/default/pods?labelSelector=app%3Dagent`);
  return items.filter((p) =>
    p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  )
    .length;
}

interface Run {
  pullPhase?: number;
  /** Fewest Ready agent pods seen while the fleet pulled. */
  fewestReady?: number;
  failed?: number;
  rollout: number;
}

/** How the update waits while the fleet pulls: not at all, paused, or outside its window. */
type Hold = "none" | "paused" | "window";

const hhmm = (instant: number) => new Date(instant).toISOString().slice(11, 16);
/** A window in UTC from `start` (its minute) for an hour. */
const windowFrom = (start: number) => ({
  timeZone: "UTC",
  windows: [{ start: hhmm(start), duration: "60m" }],
});
/** What holds the update, written with agent:2, and what lets it go, when each is written. */
const holds = {
  paused: { held: () => ({ paused: true }), released: () => ({ paused: false }) },
  window: {
    held: () => ({ maintenance: windowFrom(Date.now() + 2 * 3600_000) }),
    released: () => ({ maintenance: windowFrom(Date.now() - 60_000) }),
  },
};

async function run(hold: Hold): Promise<Run> {
  let result: Run = { rollout: 0 };
  await withSimProcess({ nodes, zones: 4, speed, pullSeconds, startSeconds }, async (sim) => {
    const kc = await installEdgerollCrds(sim);
    await withEdgeroll(sim.kubeconfigPath, {}, async () => {
      await createAgentSet(kc, "agent:1", "10%");
      await untilRolledOut(sim, nodes, 1, "agent:1", timeoutMs);
      console.error(
        `fleet of ${nodes} on agent:1; ${
          hold === "none" ? "rolling" : `pre-downloading (${hold})`
        }`,
      );
      if (hold === "none") {
        const started = performance.now();
        await setAgentImage(kc, "agent:2");
        await untilRolledOut(sim, nodes, 2, "agent:2", timeoutMs);
        result = { rollout: (performance.now() - started) / 1000 };
        return;
      }
      const pullStarted = performance.now();
      await mergePatchSet(kc, {
        metadata: {
          annotations: { "apps.kruise.io/image-predownload-parallelism": String(parallelism) },
        },
        spec: {
          template: agentSet("agent:2").spec.template,
          updateStrategy: { rollingUpdate: holds[hold].held() },
        },
      });
      let fewestReady = nodes;
      let progress;
      for (let last = 0;;) {
        const { status } = await getJson<SetRead>(setUrl(sim));
        fewestReady = Math.min(fewestReady, await readyPods(sim));
        progress = status?.imagePreDownload;
        const done = status?.conditions?.find((c) => c.type === "ImagesPreDownloaded");
        if (done?.status === "True") break;
        if (performance.now() - pullStarted > timeoutMs) {
          throw new Error("the pull phase timed out");
        }
        if (progress && progress.pulled - last >= nodes / 10) {
          last = progress.pulled;
          console.error(`pulled on ${progress.pulled} of ${progress.nodes} nodes`);
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const pullPhase = (performance.now() - pullStarted) / 1000;
      const started = performance.now();
      await mergePatchSet(kc, {
        spec: { updateStrategy: { rollingUpdate: holds[hold].released() } },
      });
      // Resuming is a spec change too: the rollout ends at the generation it made.
      const { metadata } = await getJson<{ metadata: { generation: number } }>(setUrl(sim));
      await untilRolledOut(sim, nodes, metadata.generation, "agent:2", timeoutMs);
      result = {
        pullPhase,
        fewestReady,
        failed: progress?.failed ?? 0,
        rollout: (performance.now() - started) / 1000,
      };
    });
  });
  return result;
}

const without = await run("none");
const runs = { paused: await run("paused"), window: await run("window") };
const waves = 10;
const ideal = (pull: number) => waves * (2 + pull + startSeconds) / speed;
console.log(
  `\npre-download: ${nodes} nodes, 10% maxUnavailable (${waves} waves), pull ${pullSeconds} s, start ${startSeconds} s, simulated at speed ${speed}\n`,
);
const heldRow = (name: string, r: Run) => [
  name,
  `${r.pullPhase!.toFixed(1)} s`,
  `${r.fewestReady} of ${nodes}`,
  String(r.failed),
  `${r.rollout.toFixed(1)} s`,
  `${ideal(0).toFixed(1)} s`,
];
console.log(markdownTable(
  [
    "",
    "pull phase",
    "fewest Ready pods while pulling",
    "failed pulls",
    "rollout proper",
    "waves × (stop + pull + start) / speed",
  ],
  [
    [
      "without pre-download",
      "—",
      "—",
      "—",
      `${without.rollout.toFixed(1)} s`,
      `${ideal(pullSeconds).toFixed(1)} s`,
    ],
    heldRow(`with pre-download, paused (parallelism ${parallelism})`, runs.paused),
    heldRow(
      `with pre-download, outside a maintenance window (parallelism ${parallelism})`,
      runs.window,
    ),
  ],
));
for (const [hold, r] of Object.entries(runs)) {
  const saved = 1 - r.rollout / without.rollout;
  console.log(`rollout proper ${hold}: ${(saved * 100).toFixed(0)}% shorter (goal: at least 50%)`);
}
