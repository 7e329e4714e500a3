/**
 * Maintenance windows (ADR 0054) as an operator sets them, minutes from the scenario's start (no
 * clock is sped up on a real API server): a new image outside the window waits while its image is
 * pulled on every node ahead of the opening; one spec, written once, holds a window open now
 * that closes by the clock mid-rollout (pods in flight finish, no more start) and the next
 * window, opened by the clock alone (the tick wakes the set at its `nextCheckAt`), which
 * finishes it.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { maintenanceAnnotation, type MaintenanceStatus } from "../../api/maintenance.ts";
import { otaDaemonSet, setOtaImage } from "../edge-ota.ts";
import { withEdgeroll } from "../processes.ts";
import {
  advancedDaemonSet,
  completeOn,
  image,
  podsByNode,
  setImage,
  type SetStatus,
  setStatus,
} from "./edgeroll-scenarios.ts";
import { kubectlEdgeroll } from "./failure-scenario.ts";
import { conditionStatus, eventually, type Kube } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";

const minute = 60_000;

/** `HH:MM` in UTC of `instant`. */
const hhmm = (instant: number) => new Date(instant).toISOString().slice(11, 16);

/** Windows in UTC, each from `start` (rounded down to its minute) for `minutes`. */
const windowsAt = (...windows: { start: number; minutes: number }[]) => ({
  timeZone: "UTC",
  windows: windows.map((w) => ({ start: hhmm(w.start), duration: `${w.minutes}m` })),
});

/** One window in UTC from `start` (rounded down to its minute) for `minutes`. */
const windowAt = (start: number, minutes: number) => windowsAt({ start, minutes });

/** An instant as the controller writes it in status and Events (whole seconds). */
const instant = (at: number) => new Date(at).toISOString().replace(".000Z", "Z");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * The timing of the window closing mid-rollout (windows are whole minutes, so it closes at a
 * minute boundary): the spec is written `closeAtMost` s before the boundary (or at once when it is
 * `closeAtLeast`…`closeAtMost` s away; the scenario sleeps until then, under a minute). With
 * maxUnavailable 1, each replacement waits for the last to be available, `minReadySeconds` after it
 * turned Ready: the first starts on the watch event (a fraction of a second), so before the close;
 * the third at least 2 × 5 s after the write, so never before it, however fast pods start. The
 * second lands on either side (sim: about 6 s in; later on cluster/, where pods start in 1–2 s),
 * so 1 or 2 of the 3 nodes are on v2 at the close. The next window opens a minute after (the
 * least a closed spell can last).
 */
const minReadySeconds = 5;
const closeAtLeast = 4;
const closeAtMost = 7;

/** Sleeps until the next minute boundary is `closeAtLeast`…`closeAtMost` s ahead; returns it. */
async function closeAhead(): Promise<number> {
  const now = Date.now();
  let close = Math.floor(now / minute) * minute + minute;
  if (close - now < closeAtLeast * 1000) close += minute;
  await sleep(close - closeAtMost * 1000 - now);
  return close;
}

type WindowedStatus = SetStatus & {
  maintenance?: MaintenanceStatus;
  imagePreDownload?: { nodes: number; pulled: number };
};

/** The nodes whose pod runs `version` (pods on their way out left aside). */
async function nodesOn(kube: Kube, ns: string, version: string): Promise<string[]> {
  const byNode = podsByNode(await kube.pods(ns, "app=edge-agent"));
  return [...byNode].filter(([, p]) => p.spec.containers[0].image === image(version))
    .map(([node]) => node).sort();
}

function setMaintenance(kube: Kube, ns: string, maintenance: object) {
  return kube.patch(ns, "ads", "edge-agent", "merge", {
    spec: { updateStrategy: { rollingUpdate: { maintenance } } },
  });
}

export const maintenanceScenario: Scenario = {
  name:
    "maintenance windows: outside the window nothing is replaced while the image is pulled ahead, a window closing mid-rollout stops it with pods in flight finished, the next window opened by the clock finishes it",
  async run(target, kube) {
    const ns = "e2e-maintenance";
    const cliRef = `ads/${ns}/edge-agent`;
    await kube.installCrd();
    await kube.createNamespace(ns);
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      const set = advancedDaemonSet(ns, "v1");
      await kube.apply({
        ...set,
        metadata: {
          ...set.metadata,
          annotations: { "apps.kruise.io/image-predownload-parallelism": "3" },
        },
        spec: {
          ...set.spec,
          minReadySeconds,
          updateStrategy: {
            type: "RollingUpdate",
            rollingUpdate: {
              maxUnavailable: 1,
              maintenance: windowAt(Date.now() + 120 * minute, 60),
            },
          },
        },
      });
      // Placement is not maintenance: a closed window does not hold the first pods.
      await completeOn(target, kube, ns, "v1");

      // v2 outside the window: nothing is replaced, the image is pulled on every node meanwhile.
      await setImage(kube, ns, "v2");
      const waiting = await eventually(
        "v2 pulled on every node, waiting for the window",
        async () => {
          // Once the pulls' Jobs are cleaned up, nothing is left to do but wait for the window.
          const status = await setStatus(kube, ns) as WindowedStatus;
          const pulled = status.imagePreDownload?.pulled === target.nodes.length;
          const progressing = status.conditions?.find((c) => c.type === "Progressing");
          return pulled && status.maintenance?.open === false &&
              progressing?.reason === "MaintenanceWindow"
            ? status
            : undefined;
        },
        180_000,
      );
      assertEquals(await nodesOn(kube, ns, "v2"), [], "nothing replaced outside the window");
      assertEquals(waiting.maintenance?.groups.map((g) => [g.state, g.outdated]), [[
        "Closed",
        target.nodes.length,
      ]]);
      const shown = await kubectlEdgeroll(target.kubeconfigPath, ["status", cliRef]);
      assertStringIncludes(shown, "maintenance: closed, next opening ");

      // The windows, written once: one open now until `closesAt` (4–7 s ahead, see
      // minReadySeconds), the next from the minute after. Only the clock moves the rollout now.
      const closesAt = await closeAhead();
      const opensAt = closesAt + minute;
      await setMaintenance(
        kube,
        ns,
        windowsAt({ start: closesAt - minute, minutes: 1 }, { start: opensAt, minutes: 30 }),
      );
      await eventually(
        "MaintenanceWindowClosed",
        async () =>
          (await kube.eventsAbout(ns, "edge-agent")).some((e) =>
            e.reason === "MaintenanceWindowClosed" &&
            e.message?.includes(`closed until ${instant(opensAt)}`)
          ) || undefined,
      );
      // Pods in flight finish: every node runs a Ready pod; no new replacement starts.
      const stopped = await eventually("every node with a Ready pod", async () => {
        const pods = [...podsByNode(await kube.pods(ns, "app=edge-agent")).values()];
        return pods.length === target.nodes.length &&
            pods.every((p) => conditionStatus(p, "Ready") === "True")
          ? pods
          : undefined;
      });
      const updated = stopped.filter((p) => p.spec.containers[0].image === image("v2")).length;
      assert(updated > 0 && updated < target.nodes.length, `${updated} nodes on v2 at the close`);
      const next = await eventually("the next opening in status", async () => {
        const status = await setStatus(kube, ns) as WindowedStatus;
        return status.maintenance?.open === false && status.maintenance.nextOpening
          ? status.maintenance
          : undefined;
      });
      assertEquals(Date.parse(next.nextOpening!), opensAt);
      // Nothing more is replaced while closed: looked at just before the next opening.
      await sleep(opensAt - 2_000 - Date.now());
      assertEquals((await nodesOn(kube, ns, "v2")).length, updated, "nothing more after the close");
      assert(Date.now() < opensAt, "looked at before the next opening");

      // The next window opens by the clock: the tick alone wakes the set.
      await completeOn(target, kube, ns, "v2");
      const created = (await kube.pods(ns, "app=edge-agent"))
        .map((p) =>
          Date.parse((p.metadata as { creationTimestamp?: string }).creationTimestamp ?? "")
        );
      const afterOpening = created.filter((t) => t >= opensAt).length;
      assertEquals(afterOpening, target.nodes.length - updated, "the rest replaced in the window");
      const events = await kube.eventsAbout(ns, "edge-agent");
      assert(
        events.some((e) =>
          e.reason === "MaintenanceWindowOpened" &&
          e.message?.includes(`open until ${instant(opensAt + 30 * minute)}`)
        ),
        events.map((e) => `${e.reason}: ${e.message}`).join("\n"),
      );
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

export const otaMaintenanceScenario: Scenario = {
  name:
    "maintenance windows in OTA mode: outside the node's window no pod is marked, the controller's upgrade API answers 403 naming the next opening, and the node pulls the revision it waits for; the window opens and every pod is marked",
  async run(target, kube) {
    const ns = "e2e-ota-maintenance";
    const otaImage = (v: string) => `edgeroll.test/ota-agent:${v}`;
    const closedFrom = Date.now() + 120 * minute;
    const set = otaDaemonSet(ns, otaImage("v1"));
    const annotate = (maintenance: object) =>
      kube.run([
        "--namespace",
        ns,
        "annotate",
        "--overwrite",
        "daemonset",
        "ota-agent",
        `${maintenanceAnnotation}=${JSON.stringify(maintenance)}`,
      ]);
    await kube.installCrd();
    await kube.createNamespace(ns);
    await kube.apply(set);
    await annotate(windowAt(closedFrom, 60));
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async (api) => {
      const pods = await eventually("one ota-agent pod per node", async () => {
        const found = [...podsByNode(await kube.pods(ns, "app=ota-agent")).values()];
        return found.length === target.nodes.length ? found : undefined;
      });
      await setOtaImage(kube, ns, otaImage("v2"));
      const waiting = await eventually("the OTA set waits for its window", async () => {
        const status = await kube.writtenStatus("daemonsets", "daemonsets", ns, "ota-agent") as
          | WindowedStatus
          | undefined;
        return status?.maintenance?.open === false &&
            status.maintenance.groups[0]?.outdated === target.nodes.length
          ? status.maintenance
          : undefined;
      });
      const opensAt = new Date(Math.floor(closedFrom / minute) * minute).toISOString()
        .replace(".000Z", "Z");
      assertEquals(waiting.nextOpening, opensAt);
      const now = await kube.pods(ns, "app=ota-agent");
      assert(now.every((p) => conditionStatus(p, "PodNeedUpgrade") !== "True"), "none marked");
      const pod = pods[0];
      const res = await fetch(
        `${api.url}/openyurt.io/v1/namespaces/${ns}/pods/${pod.metadata.name}/upgrade`,
        { method: "POST", headers: { authorization: `Bearer ${api.token}` } },
      );
      assertEquals(res.status, 403);
      assertStringIncludes(
        await res.text(),
        `update status is False, can not be updated: the maintenance window of UTC is closed until ${opensAt}`,
      );

      // Staging is not held: the node pulls the revision it waits for, outside its window.
      const pull = await fetch(
        `${api.url}/openyurt.io/v1/namespaces/${ns}/pods/${pod.metadata.name}/imagepull`,
        { method: "POST", headers: { authorization: `Bearer ${api.token}` } },
      );
      assertEquals(pull.status, 200, await pull.text());
      await eventually("the held pod's image pulled outside its window", async () => {
        const now = (await kube.pods(ns, "app=ota-agent"))
          .find((p) => p.metadata.name === pod.metadata.name);
        return now && conditionStatus(now, "PodImageReady") === "True" &&
            conditionStatus(now, "PodNeedUpgrade") === "False"
          ? true
          : undefined;
      }, 120_000);

      await annotate(windowAt(Date.now() - minute, 60));
      await eventually("every OTA pod marked in the open window", async () => {
        const marked = (await kube.pods(ns, "app=ota-agent")).filter((p) =>
          conditionStatus(p, "PodNeedUpgrade") === "True"
        );
        return marked.length === target.nodes.length || undefined;
      });
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};
