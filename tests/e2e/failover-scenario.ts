/**
 * The in-cluster shape's promise (ADR 0038): two replicas behind one Lease, the holder doing the
 * work; killed mid-rollout (SIGKILL: no Lease given up), the other takes over within twice the
 * Lease duration and finishes the rollout within its budget, and nothing is done twice. Before
 * that, the standby answers curl and the tick by the status claim, acting on nothing at rest.
 */
import { assert, assertEquals } from "@std/assert";
import { conditionStatus, eventually, type Kube, type Pod } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";
import { withControllers } from "../processes.ts";
import { advancedDaemonSet, completeOn, image, setImage, setStatus } from "./edgeroll-scenarios.ts";
import { post } from "./trigger-scenarios.ts";

const ns = "e2e-failover";
const leaseName = "edgeroll";
/** Short, so the scenario waits seconds; the manifests keep client-go's 15 s. */
const leaseSeconds = 4;

/** The Lease's holder as `serve` names itself by default: host name, then its process id. */
async function holderPid(kube: Kube): Promise<number | undefined> {
  const lease = await kube.json<{ spec?: { holderIdentity?: string } }>(
    ["--namespace", ns, "get", "lease", leaseName],
  );
  const pid = /-(\d+)$/.exec(lease.spec?.holderIdentity ?? "")?.[1];
  return pid === undefined ? undefined : Number(pid);
}

/** Until stopped, the most nodes seen at once without a Ready pod, and each v2 pod's UID by node. */
function watchBudget(kube: Kube, nodes: string[]) {
  let maxUnavailable = 0;
  const v2Pods = new Map<string, Set<string>>();
  let running = true;
  const done = (async () => {
    while (running) {
      const pods: Pod[] = await kube.pods(ns, "app=edge-agent").catch(() => []);
      const ready = new Set(
        pods.filter((p) => !p.metadata.deletionTimestamp && conditionStatus(p, "Ready") === "True")
          .map((p) => p.spec.nodeName),
      );
      if (pods.length > 0) {
        maxUnavailable = Math.max(maxUnavailable, nodes.filter((n) => !ready.has(n)).length);
      }
      for (const pod of pods) {
        if (pod.spec.containers[0].image !== image("v2")) continue;
        const node = pod.spec.nodeName ?? "";
        v2Pods.set(node, (v2Pods.get(node) ?? new Set()).add(pod.metadata.uid));
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { maxUnavailable, v2Pods };
    },
  };
}

export const failoverScenario: Scenario = {
  name:
    "the replica holding the Lease is killed mid-rollout: the other takes over within twice the Lease duration, in budget, nothing done twice",
  async run(target, kube) {
    await kube.installCrd();
    await kube.createNamespace(ns);
    await withControllers(target.kubeconfigPath, {
      replicas: 2,
      serveArgs: ["--tick=1s", `--lease=${ns}/${leaseName}`, `--lease-duration=${leaseSeconds}s`],
    }, async (controllers) => {
      const leader = await eventually("a replica holding the Lease", async () => {
        const pid = await holderPid(kube);
        return pid !== undefined && controllers.pids.includes(pid) ? pid : undefined;
      });
      const standby = controllers.pids.find((pid) => pid !== leader)!;
      const standbyUrl = controllers.urls[controllers.pids.indexOf(standby)];

      const set = advancedDaemonSet(ns, "v1");
      // Each wave lasts a few seconds: long enough to kill the leader between two.
      (set.spec as Record<string, unknown>).minReadySeconds = 3;
      await kube.apply(set);
      await completeOn(target, kube, ns, "v1");

      // The standby answers curl and the tick by a claim: at rest, it has nothing to do.
      const curl = await post(
        controllers,
        `/reconcile/advanceddaemonsets/${ns}/edge-agent`,
        {},
        standbyUrl,
      );
      const answer = await curl.json() as { actions?: unknown[] };
      assertEquals(curl.status, 200, JSON.stringify(answer));
      assertEquals(answer.actions, [], "the standby's reconcile at rest acts on nothing");
      const tick = await post(controllers, "/tick?full=true", {}, standbyUrl);
      assertEquals(tick.status, 200, await tick.text());

      const budget = watchBudget(kube, target.nodes);
      await setImage(kube, ns, "v2");
      await eventually("the first node on v2", async () => {
        const updated = (await setStatus(kube, ns)).updatedNumberScheduled ?? 0;
        return updated >= 1 && updated < target.nodes.length ? true : undefined;
      });
      Deno.kill(leader, "SIGKILL");
      const killedAt = Date.now();
      await eventually(
        "the standby holding the Lease",
        async () => await holderPid(kube) === standby ? true : undefined,
      );
      const tookOverMs = Date.now() - killedAt;
      assert(
        tookOverMs <= 2 * leaseSeconds * 1000,
        `the standby took the Lease ${tookOverMs} ms after the kill (at most ${
          2 * leaseSeconds
        } s)`,
      );
      await completeOn(target, kube, ns, "v2");
      const seen = await budget.stop();
      assert(seen.maxUnavailable <= 1, `${seen.maxUnavailable} nodes unavailable at once`);
      // Nothing twice: one v2 pod per node ever, two revisions.
      assertEquals(
        [...seen.v2Pods.entries()].map(([node, uids]) => [node, uids.size]).sort(),
        target.nodes.map((n) => [n, 1]).sort(),
      );
      const revisions = await kube.json<{ items: unknown[] }>(
        ["--namespace", ns, "get", "controllerrevisions", "-l", "app=edge-agent"],
      );
      assertEquals(revisions.items.length, 2);
    });
  },
};
