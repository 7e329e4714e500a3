/**
 * A rollout that stops itself (ADR 0035), as an operator meets it: an AdvancedDaemonSet moved
 * to an image that crash-loops, with a failure budget of none, stops in its first wave; the
 * nodes not reached keep the old pods; a Warning says which pod; a good image ends the stop.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { withEdgeroll } from "../processes.ts";
import {
  advancedDaemonSet,
  asOpenYurtDaemonSet,
  completeOn,
  image,
  setImage,
  type SetResource,
  setStatus,
} from "./edgeroll-scenarios.ts";
import {
  failureAnnotations,
  maxUnavailableAnnotation,
  updateStrategyAnnotation,
} from "../../api/openyurt.ts";
import { eventually } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";

/**
 * The scenarios' set at v1 with a failure policy. A crashing container is Ready between its
 * restarts: minReadySeconds keeps such a pod from counting as available, so the next node waits
 * for the verdict (ADR 0035). It need only outlast one such Ready spell, with room for a loaded
 * machine: sim's is 0.1 s (2 s at speed 20), and kwok's crash stage is never Ready. Every node
 * waits it out once per wave, so a longer one (it was 10 s) costs a minute per scenario and
 * proves nothing more.
 */
function budgetedSet(ns: string, failurePolicy: Record<string, unknown>) {
  const set = advancedDaemonSet(ns, "v1") as ReturnType<typeof advancedDaemonSet> & {
    spec: {
      updateStrategy: { rollingUpdate: Record<string, unknown> };
      minReadySeconds?: number;
    };
  };
  set.spec.updateStrategy.rollingUpdate.failurePolicy = failurePolicy;
  set.spec.minReadySeconds = 4;
  return set;
}

export const failureBudgetScenario: Scenario = {
  name:
    "failure budget: a crash-looping image stops the rollout in its first wave, the other nodes keep their pods, and a good image rolls on",
  async run(target, kube) {
    const ns = "e2e-failure-budget";
    await kube.installCrd();
    await kube.createNamespace(ns);
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      await kube.apply(budgetedSet(ns, { maxFailed: 0 }));
      await completeOn(target, kube, ns, "v1");
      await setImage(kube, ns, "crash");
      const stopped = await eventually("RolloutStopped", async () => {
        const status = await setStatus(kube, ns);
        const c = status.conditions?.find((c) => c.type === "RolloutStopped");
        return c?.status === "True" ? { c, status } : undefined;
      }, 120_000);
      assertEquals(stopped.c.reason, "FailureBudgetExceeded");
      assertStringIncludes(stopped.c.message ?? "", "CrashLoopBackOff");
      // A while later, still one node on the bad image, the others on v1 and Ready.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const pods = (await kube.pods(ns, "app=edge-agent")).filter((p) =>
        !p.metadata.deletionTimestamp
      );
      const images = pods.map((p) => p.spec.containers[0].image).sort();
      assertEquals(images, [image("crash"), ...target.nodes.slice(1).map(() => image("v1"))]);
      const events = await kube.eventsAbout(ns, "edge-agent");
      assertEquals(
        events.some((e) => e.type === "Warning" && e.reason === "FailureBudgetExceeded"),
        true,
      );
      // A good template: a new revision, the stop is over.
      await setImage(kube, ns, "v2");
      await completeOn(target, kube, ns, "v2");
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

/** `kubectl edgeroll …` through bin/kubectl-edgeroll on PATH, as an operator types it. */
export async function kubectlEdgeroll(kubeconfig: string, args: string[]): Promise<string> {
  const root = new URL("../../", import.meta.url).pathname;
  const out = await new Deno.Command("kubectl", {
    args: ["edgeroll", ...args],
    env: { KUBECONFIG: kubeconfig, PATH: `${root}bin:${Deno.env.get("PATH")}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`kubectl edgeroll ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

/** A kind of set the rollback scenario runs on: how it is written with a failure policy. */
interface KindUnderTest {
  /** For the scenario's name. */
  article: string;
  resource: SetResource;
  /** The kind as an operator types it to kubectl edgeroll. */
  shortName: string;
  /** The set at v1, at most one node updating at a time, with this policy. */
  manifest(ns: string, policy: FailurePolicy): unknown;
  /** A merge patch that sets a progress deadline and a budget the deadline case does not spend. */
  deadline(seconds: number, policy: FailurePolicy): unknown;
}

interface FailurePolicy {
  maxFailed: number;
  rollback?: boolean;
  podStartTimeoutSeconds?: number;
}

const advancedDaemonSets: KindUnderTest = {
  article: "an AdvancedDaemonSet",
  resource: "advanceddaemonsets",
  shortName: "ads",
  manifest: (ns, policy) => budgetedSet(ns, { ...policy }),
  deadline: (seconds, policy) => ({
    spec: {
      progressDeadlineSeconds: seconds,
      updateStrategy: { rollingUpdate: { failurePolicy: policy } },
    },
  }),
};

/** OpenYurt's policy in edgeroll's annotations (ADR 0035), its pods made by the DaemonSet controller. */
const openYurtDaemonSets: KindUnderTest = {
  article: "an OpenYurt DaemonSet",
  resource: "daemonsets",
  shortName: "ds",
  manifest: (ns, policy) =>
    asOpenYurtDaemonSet(budgetedSet(ns, {}), {
      [updateStrategyAnnotation]: "AdvancedRollingUpdate",
      [maxUnavailableAnnotation]: "1",
      ...failureAnnotationsOf(policy),
    }),
  deadline: (seconds, policy) => ({
    metadata: {
      annotations: {
        [failureAnnotations.progressDeadlineSeconds]: String(seconds),
        ...failureAnnotationsOf(policy),
      },
    },
  }),
};

function failureAnnotationsOf(policy: FailurePolicy): Record<string, string> {
  return {
    [failureAnnotations.maxFailed]: String(policy.maxFailed),
    ...(policy.rollback === undefined
      ? {}
      : { [failureAnnotations.rollback]: String(policy.rollback) }),
    ...(policy.podStartTimeoutSeconds === undefined
      ? {}
      : { [failureAnnotations.podStartTimeoutSeconds]: String(policy.podStartTimeoutSeconds) }),
  };
}

function rollbackScenario(kind: KindUnderTest): Scenario {
  const { resource } = kind;
  return {
    name:
      `rollback of ${kind.article}: a crash-looping image stops and the last good revision comes back on every node; the deadline sets its condition; kubectl edgeroll history, status, pause, undo and resume`,
    async run(target, kube) {
      const ns = `e2e-rollback-${resource}`;
      const cliRef = `${kind.shortName}/${ns}/edge-agent`;
      await kube.installCrd();
      await kube.createNamespace(ns);
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
        await kube.apply(kind.manifest(ns, { maxFailed: 0, rollback: true }));
        await completeOn(target, kube, ns, "v1", resource);

        // A crash-looping image: stopped in the first wave, v1's template back, v1 everywhere.
        await setImage(kube, ns, "crash", resource);
        const rolledBack = await eventually("the rollback", async () => {
          const status = await setStatus(kube, ns, resource) as {
            rollback?: { to: string; reason: string };
          };
          return status.rollback;
        }, 120_000);
        assertEquals(rolledBack.reason, "FailureBudgetExceeded");
        await completeOn(target, kube, ns, "v1", resource);
        const history = await kubectlEdgeroll(target.kubeconfigPath, ["history", cliRef]);
        assertStringIncludes(history, `agent=${image("crash")}`);
        const status = await kubectlEdgeroll(target.kubeconfigPath, ["status", cliRef]);
        const nodes = target.nodes.length;
        assertStringIncludes(status, `${nodes}/${nodes} updated`);
        assertStringIncludes(status, "Complete");

        // Paused, moved to v2, nothing replaced; undone to v1 from the command line; resumed.
        await kubectlEdgeroll(target.kubeconfigPath, ["pause", cliRef]);
        await setImage(kube, ns, "v2", resource);
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const pods = (await kube.pods(ns, "app=edge-agent")).filter((p) =>
          !p.metadata.deletionTimestamp
        );
        assertEquals(
          pods.map((p) => p.spec.containers[0].image),
          target.nodes.map(() => image("v1")),
          "paused",
        );
        const undone = await kubectlEdgeroll(target.kubeconfigPath, ["undo", cliRef]);
        assertStringIncludes(undone, "rolled back to revision");
        await kubectlEdgeroll(target.kubeconfigPath, ["resume", cliRef]);
        await completeOn(target, kube, ns, "v1", resource);

        // The deadline: pods that never become Ready, no failure by reason, Progressing says so.
        await kube.patch(
          ns,
          resource,
          "edge-agent",
          "merge",
          kind.deadline(5, { maxFailed: 10, podStartTimeoutSeconds: 3600 }),
        );
        await setImage(kube, ns, "unready", resource);
        const late = await eventually("ProgressDeadlineExceeded", async () => {
          const c = (await setStatus(kube, ns, resource)).conditions?.find((c) =>
            c.type === "Progressing"
          );
          return c?.reason === "ProgressDeadlineExceeded" ? c : undefined;
        }, 120_000);
        assertEquals(late.status, "False");
      });
      await kube.run(["delete", "namespace", ns, "--wait=false"]);
    },
  };
}

export const rollbackScenarios = [advancedDaemonSets, openYurtDaemonSets].map(rollbackScenario);
