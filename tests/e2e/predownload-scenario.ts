/**
 * Kruise's image pre-download as an operator uses it on a slow link: an AdvancedDaemonSet moved
 * to a new image while paused pulls it on every node ahead of the update, `parallelism` at a
 * time, once `min-updated-ready-pods` allows; then resumed, it rolls onto images already there.
 * Then, unpaused, a new image pulls on the nodes not yet updated once one of its pods is Ready.
 */
import { assert, assertEquals } from "@std/assert";
import { withEdgeroll } from "../processes.ts";
import {
  advancedDaemonSet,
  completeOn,
  image,
  setImage,
  type SetStatus,
  setStatus,
} from "./edgeroll-scenarios.ts";
import { conditionStatus, eventually } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";
import { pullJobs } from "./ota-scenarios.ts";

const parallelism = "apps.kruise.io/image-predownload-parallelism";
const minUpdatedReady = "apps.kruise.io/image-predownload-min-updated-ready-pods";

export const preDownloadScenario: Scenario = {
  name:
    "Kruise's image pre-download: paused on a new image, the set waits for min-updated-ready-pods, then pulls on every node one at a time (parallelism 1), and resumed, rolls out; unpaused, the rest of the fleet pulls once the first new pod is Ready",
  async run(target, kube) {
    const ns = "e2e-predownload";
    await kube.installCrd();
    await kube.createNamespace(ns);
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      const set = advancedDaemonSet(ns, "v1");
      await kube.apply(set);
      await completeOn(target, kube, ns, "v1");

      // Paused on v2, with pre-download asked: one node at a time, after one new pod is Ready.
      const paused = structuredClone(set) as typeof set & {
        metadata: { annotations?: Record<string, string> };
        spec: { updateStrategy: { rollingUpdate: Record<string, unknown> } };
      };
      paused.metadata.annotations = { [parallelism]: "1", [minUpdatedReady]: "1" };
      paused.spec.updateStrategy.rollingUpdate.paused = true;
      paused.spec.template.spec.containers[0].image = image("v2");
      await kube.apply(paused);
      const waiting = await eventually("ImagesPreDownloaded WaitingForUpdatedPods", async () => {
        const c = (await setStatus(kube, ns)).conditions?.find((c) =>
          c.type === "ImagesPreDownloaded"
        );
        return c?.reason === "WaitingForUpdatedPods" ? c : undefined;
      });
      assertEquals(waiting.status, "False");
      assertEquals(await pullJobs(kube, ns), [], "no pull before a new pod is Ready");

      // An operator lets the fleet pull before any node updates.
      await kube.run([
        "--namespace",
        ns,
        "annotate",
        "--overwrite",
        "ads",
        "edge-agent",
        `${minUpdatedReady}=0`,
      ]);
      const seen = new Map<string, string>(); // Job name → node, in the order they appeared
      let mostPulling = 0;
      const done = await eventually("every node pulled v2", async () => {
        for (const job of await pullJobs(kube, ns)) {
          seen.set(job.metadata.name ?? "", job.spec?.template?.spec?.nodeName ?? "");
        }
        const status = await setStatus(kube, ns);
        const progress = status.imagePreDownload;
        mostPulling = Math.max(mostPulling, progress?.pulling ?? 0);
        const condition = status.conditions?.find((c) => c.type === "ImagesPreDownloaded");
        return condition?.status === "True" ? { progress, condition } : undefined;
      }, 180_000);
      // The Jobs read last may predate the status that said Pulled: they stay 30 s past their end.
      for (const job of await pullJobs(kube, ns)) {
        seen.set(job.metadata.name ?? "", job.spec?.template?.spec?.nodeName ?? "");
      }
      assertEquals(done.condition.reason, "Pulled");
      assertEquals(
        [done.progress?.nodes, done.progress?.pulled, done.progress?.failed],
        [target.nodes.length, target.nodes.length, 0],
      );
      assert(mostPulling <= 1, `parallelism 1: ${mostPulling} nodes pulling at once`);
      assertEquals([...seen.values()].sort(), [...target.nodes].sort(), "one Job per node");
      // Each old pod holds its node's result; nothing was updated while paused.
      const pods = await kube.pods(ns, "app=edge-agent");
      for (const pod of pods) {
        const ready = pod.status?.conditions?.find((c) => c.type === "PodImageReady");
        assertEquals(
          [ready?.status, ready?.reason],
          ["True", "PullImageSuccess"],
          pod.metadata.name,
        );
        assert(pod.spec.containers[0].image === image("v1"));
      }

      await kube.patch(ns, "ads", "edge-agent", "merge", {
        spec: { updateStrategy: { rollingUpdate: { paused: false } } },
      });
      await completeOn(target, kube, ns, "v2");

      // Unpaused, v3 with min-updated-ready-pods 1: no Job until the first v3 pod is Ready (and
      // available: minReadySeconds holds the next wave meanwhile), then the nodes not yet
      // updated pull while the rollout goes on.
      await kube.patch(ns, "ads", "edge-agent", "merge", {
        metadata: { annotations: { [minUpdatedReady]: "1" } },
        spec: { minReadySeconds: 5 },
      });
      // Until the v2 pods have been Ready that long they are unavailable, and an old pod that
      // is unavailable is replaced outside the budget (as upstream): wait for them first.
      await eventually("v2 available under minReadySeconds", async () => {
        const set = await kube.json<
          { metadata: { generation: number }; status?: SetStatus }
        >(["--namespace", ns, "get", "ads", "edge-agent"]);
        return set.status?.observedGeneration === set.metadata.generation &&
            set.status.numberAvailable === target.nodes.length
          ? true
          : undefined;
      });
      await setImage(kube, ns, "v3");
      const firstUpdated = new Set<string>(); // nodes with a Ready v3 pod before any Job
      const pulledOn = new Set<string>();
      await eventually("v3 rolled out, pre-downloaded ahead of the update", async () => {
        const jobs = (await pullJobs(kube, ns)).filter((job) =>
          job.spec?.template?.spec?.containers?.[0]?.image === image("v3")
        );
        const readyV3 = (await kube.pods(ns, "app=edge-agent")).filter((p) =>
          p.spec.containers[0].image === image("v3") && conditionStatus(p, "Ready") === "True"
        );
        if (pulledOn.size === 0 && jobs.length === 0) {
          for (const pod of readyV3) firstUpdated.add(pod.spec.nodeName ?? "");
        }
        for (const job of jobs) pulledOn.add(job.spec?.template?.spec?.nodeName ?? "");
        return readyV3.length === target.nodes.length ? true : undefined;
      }, 180_000);
      assert(firstUpdated.size > 0, "a v3 pod was Ready before the first Job");
      assert(pulledOn.size > 0, "the nodes not yet updated pulled v3");
      for (const node of pulledOn) {
        assert(!firstUpdated.has(node), `${node} pulled after its v3 pod was Ready`);
      }
      await completeOn(target, kube, ns, "v3");
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};
