/**
 * Resources resized in place (Kubernetes 1.33's `pods/resize`; ADR 0056). First what the cluster
 * itself does, the same on sim and on cluster/: a resize applied without a restart, or with one
 * where `resizePolicy` asks; the pod itself refused the change; the API server's refusals; a
 * resize beyond the node Infeasible. Then edgeroll rolling an InPlaceIfPossible set through
 * resources-only changes: the same pods, restart counts by `resizePolicy`, the budget held; a
 * resize its node refuses recreates that pod only.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { withEdgeroll } from "../processes.ts";
import { advancedDaemonSet, image, podsByNode, refused, setStatus } from "./edgeroll-scenarios.ts";
import { conditionStatus, eventually, patchArgs, type Pod, type Resources } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";

const resizeConditions = ["PodResizePending", "PodResizeInProgress"];

function containerStatus(pod: Pod, name: string) {
  return pod.status?.containerStatuses?.find((s) => s.name === name);
}

/** Whether every container runs the cpu and memory of its spec, as its kubelet reports them. */
function runsItsResources(pod: Pod): boolean {
  return pod.spec.containers.every((c) =>
    JSON.stringify(c.resources ?? {}) === JSON.stringify(containerStatus(pod, c.name)?.resources)
  ) && !pod.status?.conditions?.some((c) => resizeConditions.includes(c.type));
}

function readySince(pod: Pod): string | undefined {
  return pod.status?.conditions?.find((c) => c.type === "Ready" && c.status === "True")
    ?.lastTransitionTime;
}

const resources = (cpu: string, memory: string, limits = { cpu, memory }): Resources => ({
  requests: { cpu, memory },
  limits,
});

/** `kubectl patch pod NAME --subresource=resize` of the containers' resources. */
function resizeArgs(ns: string, pod: string, containers: { name: string; resources: Resources }[]) {
  return [
    ...patchArgs(ns, "pod", pod, "strategic", { spec: { containers } }),
    "--subresource=resize",
  ];
}

export const resizeBehaviourScenario: Scenario = {
  name:
    "a pod's cpu and memory resized in place: running on, or restarted as resizePolicy asks; refused beyond its node",
  async run(target, kube) {
    const ns = "e2e-resize";
    await kube.createNamespace(ns);
    await eventually("the pod to be admitted", () =>
      kube.apply({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "resized", namespace: ns, labels: { app: "resized" } },
        spec: {
          nodeName: target.nodes[0],
          containers: [
            {
              name: "agent",
              image: "edgeroll.test/agent:v1",
              resources: resources("100m", "64Mi", { cpu: "200m", memory: "128Mi" }),
            },
            {
              name: "sidecar",
              image: "edgeroll.test/sidecar:v1",
              resources: resources("50m", "32Mi", { cpu: "100m", memory: "64Mi" }),
              resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
            },
          ],
        },
      }));
    const pod = (what: string, check: (pod: Pod) => boolean) =>
      eventually(what, async () => {
        const [found] = await kube.pods(ns, "app=resized");
        return found && conditionStatus(found, "Ready") === "True" && check(found)
          ? found
          : undefined;
      });
    const before = await pod("the pod Ready, running the resources of its spec", runsItsResources);
    assertEquals(before.status?.qosClass, "Burstable");
    assertEquals(containerStatus(before, "agent")?.allocatedResources, {
      cpu: "100m",
      memory: "64Mi",
    });

    // The pod itself may not change them: only through its resize subresource.
    const direct = await refused(
      kube,
      patchArgs(ns, "pod", "resized", "strategic", {
        spec: { containers: [{ name: "agent", resources: resources("150m", "64Mi") }] },
      }),
    );
    assertStringIncludes(direct, "pod updates may not change fields other than");

    // cpu, resizePolicy NotRequired (the default): the container runs on, the pod stays Ready.
    await kube.run(resizeArgs(ns, "resized", [{
      name: "agent",
      resources: resources("150m", "64Mi", { cpu: "300m", memory: "128Mi" }),
    }]));
    const cpu = await pod(
      "agent running 150m",
      (p) =>
        containerStatus(p, "agent")?.resources?.requests?.cpu === "150m" && runsItsResources(p),
    );
    assertEquals(cpu.metadata.uid, before.metadata.uid);
    assertEquals(containerStatus(cpu, "agent")?.restartCount, 0);
    assertEquals(containerStatus(cpu, "agent")?.allocatedResources?.cpu, "150m");
    assertEquals(readySince(cpu), readySince(before), "Ready all along");

    // memory of the sidecar, whose resizePolicy says RestartContainer: it restarts, once.
    await kube.run(resizeArgs(ns, "resized", [{
      name: "sidecar",
      resources: resources("50m", "48Mi", { cpu: "100m", memory: "96Mi" }),
    }]));
    const memory = await pod(
      "the sidecar restarted with 96Mi",
      (p) =>
        containerStatus(p, "sidecar")?.resources?.limits?.memory === "96Mi" && runsItsResources(p),
    );
    assertEquals(memory.metadata.uid, before.metadata.uid);
    assertEquals(containerStatus(memory, "sidecar")?.restartCount, 1);
    assertEquals(containerStatus(memory, "agent")?.restartCount, 0);

    // The API server's own refusals: a QoS class that would change, a memory limit lowered
    // without RestartContainer.
    const qos = await refused(
      kube,
      resizeArgs(ns, "resized", [
        { name: "agent", resources: resources("300m", "128Mi") },
        { name: "sidecar", resources: resources("100m", "96Mi") },
      ]),
    );
    assertStringIncludes(qos, "Pod QOS Class may not change as a result of resizing");
    const lowered = await refused(
      kube,
      resizeArgs(ns, "resized", [{
        name: "agent",
        resources: resources("150m", "64Mi", { cpu: "300m", memory: "96Mi" }),
      }]),
    );
    assertStringIncludes(
      lowered,
      "memory limits cannot be decreased unless resizePolicy is RestartContainer",
    );

    // More cpu than the node has at all: Infeasible, said by its kubelet (the pod's requests
    // summed: 1000 and the sidecar's 50m); the containers run on.
    await kube.run(resizeArgs(ns, "resized", [{
      name: "agent",
      resources: resources("1000", "64Mi", { cpu: "1000", memory: "128Mi" }),
    }]));
    const infeasible = await pod(
      "the resize Infeasible",
      (p) =>
        p.status?.conditions?.some((c) =>
          c.type === "PodResizePending" && c.reason === "Infeasible"
        ) ??
          false,
    );
    const pending = infeasible.status!.conditions!.find((c) => c.type === "PodResizePending")!;
    assert(
      /^Node didn't have enough capacity: cpu, requested: 1000050, capacity: \d+$/.test(
        pending.message ?? "",
      ),
      pending.message,
    );
    assertEquals(containerStatus(infeasible, "agent")?.resources?.requests?.cpu, "150m");
    assertEquals(containerStatus(infeasible, "agent")?.restartCount, 0);
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

/** The scenario's set: InPlaceIfPossible, one node at a time, its agent's resources given. */
function resizedSet(ns: string, agent: Resources, partition?: number) {
  const set = advancedDaemonSet(ns, "v1");
  const [container] = set.spec.template.spec.containers;
  return {
    ...set,
    spec: {
      ...set.spec,
      template: {
        ...set.spec.template,
        spec: {
          ...set.spec.template.spec,
          containers: [{
            ...container,
            resources: agent,
            resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
          }],
        },
      },
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: {
          rollingUpdateType: "InPlaceIfPossible",
          maxUnavailable: 1,
          ...(partition !== undefined ? { partition } : {}),
        },
      },
    },
  };
}

export const resizeRolloutScenario: Scenario = {
  name:
    "edgeroll resizes an InPlaceIfPossible set's pods in place within its budget, restarting what resizePolicy asks; a resize its node refuses recreates that pod",
  async run(target, kube) {
    const ns = "e2e-resize-rollout";
    await kube.installCrd();
    await kube.createNamespace(ns);
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      const settled = (what: string, cpu: string, memory: string) =>
        eventually(what, async () => {
          const status = await setStatus(kube, ns);
          const byNode = podsByNode(await kube.pods(ns, "app=edge-agent"));
          const pods = target.nodes.map((n) => byNode.get(n));
          const done = status.conditions?.find((c) => c.type === "Complete")?.status === "True" &&
            pods.every((p) =>
              p && conditionStatus(p, "Ready") === "True" && runsItsResources(p) &&
              p.spec.containers[0].resources?.limits?.cpu === cpu &&
              p.spec.containers[0].resources?.limits?.memory === memory
            );
          return done ? pods as Pod[] : undefined;
        });
      await kube.apply(resizedSet(ns, resources("100m", "64Mi", { cpu: "200m", memory: "128Mi" })));
      const before = await settled("v1 on every node", "200m", "128Mi");
      assert(before.every((p) => p.status?.containerStatuses?.[0].image === image("v1")));

      // Applies a resize and waits for it; returns the pods and the most in flight at once: a pod
      // is in flight from its resize until its kubelet reports the new resources and it is Ready.
      const resizeTo = async (
        requests: [cpu: string, memory: string],
        limits: { cpu: string; memory: string },
      ) => {
        const inFlight = new Map<string, boolean>();
        let most = 0;
        const watch = kube.watchPods(ns, "app=edge-agent", (pod) => {
          inFlight.set(
            pod.metadata.name,
            !pod.metadata.deletionTimestamp &&
              (!runsItsResources(pod) || conditionStatus(pod, "Ready") !== "True"),
          );
          most = Math.max(most, [...inFlight.values()].filter(Boolean).length);
        });
        try {
          await kube.apply(resizedSet(ns, resources(...requests, limits)));
          const what = `every pod at ${limits.cpu} cpu and ${limits.memory}`;
          return { pods: await settled(what, limits.cpu, limits.memory), most };
        } finally {
          await watch.stop();
        }
      };

      // cpu (NotRequired): in place, no restart, Ready throughout, one node at a time.
      const cpuStep = await resizeTo(["150m", "64Mi"], { cpu: "300m", memory: "128Mi" });
      const cpu = cpuStep.pods;
      assertEquals(cpuStep.most, 1, "one pod resized at a time (maxUnavailable 1)");
      assertEquals(uids(cpu), uids(before), "the same pods");
      for (const [i, pod] of cpu.entries()) {
        assertEquals(pod.status?.containerStatuses?.[0].restartCount, 0);
        assertEquals(
          readySince(pod),
          readySince(before[i]),
          `${pod.metadata.name} Ready all along`,
        );
      }

      // memory (RestartContainer): in place, each agent restarted once, one node at a time.
      const memoryStep = await resizeTo(["150m", "96Mi"], { cpu: "300m", memory: "192Mi" });
      const memory = memoryStep.pods;
      assertEquals(memoryStep.most, 1, "one pod restarted at a time (maxUnavailable 1)");
      assertEquals(uids(memory), uids(before), "the same pods");
      assert(memory.every((p) => p.status?.containerStatuses?.[0].restartCount === 1));

      // More cpu than any node has, on one node (partition 2): its node finds the resize
      // Infeasible, and that pod alone is recreated with the new resources.
      await kube.apply(resizedSet(ns, resources("64", "96Mi", { cpu: "64", memory: "192Mi" }), 2));
      const recreated = await eventually("one pod recreated with 64 cpu", async () => {
        const byNode = podsByNode(await kube.pods(ns, "app=edge-agent"));
        const pods = target.nodes.map((n) => byNode.get(n)).filter((p) => p !== undefined);
        const renewed = pods.filter((p) => !uids(memory).includes(p.metadata.uid));
        return pods.length === target.nodes.length && renewed.length === 1 &&
            renewed[0].spec.containers[0].resources?.limits?.cpu === "64"
          ? { pods, renewed: renewed[0] }
          : undefined;
      });
      const kept = recreated.pods.filter((p) => p !== recreated.renewed);
      assertEquals(kept.length, target.nodes.length - 1);
      for (const pod of kept) {
        assertEquals(pod.spec.containers[0].resources?.limits?.cpu, "300m", "left as it was");
      }
      const events = await kube.eventsAbout(ns, "edge-agent");
      const said = events.find((e) => e.reason === "ResizeRefused");
      assertStringIncludes(said?.message ?? "", "Infeasible");
      await kube.run(["--namespace", ns, "delete", "advanceddaemonsets", "edge-agent"]);
    });
  },
};

function uids(pods: Pod[]): string[] {
  return pods.map((p) => p.metadata.uid).sort();
}
