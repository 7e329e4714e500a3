/**
 * The end-to-end scenarios, written once and run on every target (sim and the real cluster).
 * Each scenario works in a namespace of its own and leaves every node Ready and connected.
 */
import { assert, assertEquals, AssertionError, assertNotEquals } from "@std/assert";
import {
  conditionStatus,
  type DaemonSetStatus,
  eventually,
  type Kube,
  patchArgs,
  type Pod,
} from "./kube.ts";
import type { E2eTarget } from "./target.ts";

export interface Scenario {
  name: string;
  run(target: E2eTarget, kube: Kube): Promise<void>;
}

const image = (version: string) => `edgeroll.test/agent:${version}`;

function daemonSet(namespace: string, updateStrategy: Record<string, unknown>) {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "agent", namespace },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      updateStrategy,
      template: {
        metadata: { labels: { app: "agent" } },
        spec: {
          terminationGracePeriodSeconds: 5,
          containers: [{ name: "agent", image: image("v1") }],
        },
      },
    },
  };
}

const rollingUpdate = { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } };

/** Creates the namespace and the DaemonSet, and waits for one Ready v1 pod per node. */
async function readyDaemonSet(
  target: E2eTarget,
  kube: Kube,
  namespace: string,
  updateStrategy: Record<string, unknown> = rollingUpdate,
): Promise<Map<string, Pod>> {
  await kube.createNamespace(namespace);
  await kube.apply(daemonSet(namespace, updateStrategy));
  return await eventually(`one Ready agent pod per node in ${namespace}`, async () => {
    const byNode = podsByNode(await kube.pods(namespace, "app=agent"));
    const ready = target.nodes.every((n) => {
      const pod = byNode.get(n);
      return pod && !pod.metadata.deletionTimestamp && conditionStatus(pod, "Ready") === "True";
    });
    return ready && byNode.size === target.nodes.length ? byNode : undefined;
  });
}

function podsByNode(pods: Pod[]): Map<string, Pod> {
  return new Map(pods.map((p) => [p.spec.nodeName ?? "", p]));
}

function assertRunningImage(pod: Pod, expected: string): string {
  const status = pod.status?.containerStatuses?.[0];
  assertEquals(status?.image, expected, `${pod.metadata.name} runs ${status?.image}`);
  if (!status?.imageID) throw new AssertionError(`${pod.metadata.name} has no imageID`);
  return status.imageID;
}

function setAgentImage(kube: Kube, namespace: string, version: string): Promise<string> {
  return kube.run([
    "--namespace",
    namespace,
    "set",
    "image",
    "daemonset/agent",
    `agent=${image(version)}`,
  ]);
}

async function daemonSetStatus(kube: Kube, namespace: string): Promise<DaemonSetStatus> {
  return await kube.json<DaemonSetStatus>(["--namespace", namespace, "get", "daemonset", "agent"]);
}

/** Runs `body` with `node` cut off, and always reconnects it and waits for it to be Ready. */
async function whileDisconnected(
  target: E2eTarget,
  kube: Kube,
  node: string,
  body: () => Promise<void>,
): Promise<void> {
  await target.disconnect(node);
  try {
    await kube.nodeReady(node, (status) => status !== "True");
    await body();
  } finally {
    await target.reconnect(node);
    await kube.nodeReady(node, (status) => status === "True");
  }
}

/** The STATUS column of `kubectl get node`. */
async function nodeStatusColumn(kube: Kube, node: string): Promise<string> {
  const line = (await kube.run(["get", "node", node, "--no-headers"])).trim();
  return line.split(/\s+/)[1];
}

export const scenarios: Scenario[] = [
  {
    name: "a new namespace gets its default ServiceAccount",
    async run(_target, kube) {
      const ns = "e2e-service-account";
      await kube.createNamespace(ns);
      await eventually(
        `ServiceAccount default in ${ns}`,
        () => kube.run(["--namespace", ns, "get", "serviceaccount", "default"]),
      );
    },
  },
  {
    name: "a native RollingUpdate DaemonSet rolls out, watched by kubectl rollout status",
    async run(target, kube) {
      const ns = "e2e-rolling-update";
      const before = await readyDaemonSet(target, kube, ns);
      const oldImageIds = [...before.values()].map((p) => assertRunningImage(p, image("v1")));

      await setAgentImage(kube, ns, "v2");
      const out = await kube.run([
        "--namespace",
        ns,
        "rollout",
        "status",
        "daemonset/agent",
        "--timeout=180s",
      ]);
      assert(out.includes("successfully rolled out"), out);

      const after = podsByNode(await kube.pods(ns, "app=agent"));
      assertEquals([...after.keys()].sort(), [...target.nodes].sort());
      for (const [node, pod] of after) {
        assertNotEquals(pod.metadata.uid, before.get(node)?.metadata.uid, `${node} kept its pod`);
        const imageId = assertRunningImage(pod, image("v2"));
        assert(!oldImageIds.includes(imageId), `${node} reports the old imageID ${imageId}`);
      }
    },
  },
  {
    name: "an OnDelete DaemonSet holds still until a pod is deleted",
    async run(target, kube) {
      const ns = "e2e-on-delete";
      const before = await readyDaemonSet(target, kube, ns, { type: "OnDelete" });
      await setAgentImage(kube, ns, "v2");
      // Once the controller has seen the new template, it would have acted by now.
      await eventually("the DaemonSet controller to observe the new template", async () => {
        const ds = await daemonSetStatus(kube, ns);
        return ds.status.observedGeneration === ds.metadata.generation ? ds : undefined;
      });
      const held = podsByNode(await kube.pods(ns, "app=agent"));
      for (const [node, pod] of held) {
        assertEquals(
          pod.metadata.uid,
          before.get(node)?.metadata.uid,
          `${node}'s pod was replaced`,
        );
        assertRunningImage(pod, image("v1"));
      }
      assertEquals((await daemonSetStatus(kube, ns)).status.updatedNumberScheduled ?? 0, 0);

      const [first, ...rest] = target.nodes;
      await kube.run(["--namespace", ns, "delete", "pod", held.get(first)!.metadata.name]);
      const replaced = await eventually(`a v2 pod on ${first}`, async () => {
        const pod = podsByNode(await kube.pods(ns, "app=agent")).get(first);
        return pod?.spec.containers[0].image === image("v2") &&
            conditionStatus(pod, "Ready") === "True"
          ? pod
          : undefined;
      });
      assertRunningImage(replaced, image("v2"));
      const others = podsByNode(await kube.pods(ns, "app=agent"));
      for (const node of rest) {
        assertEquals(others.get(node)?.metadata.uid, before.get(node)?.metadata.uid);
      }
    },
  },
  {
    name: "a disconnected node goes NotReady, keeps its pod, and recovers on reconnect",
    async run(target, kube) {
      const ns = "e2e-disconnect";
      const node = target.nodes[1];
      const before = (await readyDaemonSet(target, kube, ns)).get(node)!;
      await whileDisconnected(target, kube, node, async () => {
        const cut = await kube.node(node);
        assert(
          cut.spec.taints?.some((t) => t.key === "node.kubernetes.io/unreachable"),
          `${node} is not tainted unreachable: ${JSON.stringify(cut.spec.taints)}`,
        );
        // The node lifecycle controller marks the pods of a silent node NotReady.
        const pod = await eventually(`the pod on ${node} to be marked NotReady`, async () => {
          const pod = podsByNode(await kube.pods(ns, "app=agent")).get(node);
          return pod && conditionStatus(pod, "Ready") !== "True" ? pod : undefined;
        });
        assertEquals(pod.metadata.uid, before.metadata.uid);
        assertEquals(pod.metadata.deletionTimestamp, undefined);
        // kubectl's STATUS column, as the API server's node table renders it: a Ready
        // condition of Unknown reads NotReady.
        assertEquals(conditionStatus(cut, "Ready"), "Unknown");
        assertEquals(await nodeStatusColumn(kube, node), "NotReady");
      });
      await kube.run(["cordon", node]);
      try {
        assertEquals(await nodeStatusColumn(kube, node), "Ready,SchedulingDisabled");
      } finally {
        await kube.run(["uncordon", node]);
      }
      const healed = await eventually(`the pod on ${node} to be Ready again`, async () => {
        const pod = podsByNode(await kube.pods(ns, "app=agent")).get(node);
        return pod && conditionStatus(pod, "Ready") === "True" ? pod : undefined;
      });
      assertEquals(healed.metadata.uid, before.metadata.uid);
      const untainted = await eventually(`${node}'s unreachable taint to go`, async () => {
        const n = await kube.node(node);
        return n.spec.taints?.some((t) => t.key === "node.kubernetes.io/unreachable")
          ? undefined
          : n;
      });
      assertEquals(conditionStatus(untainted, "Ready"), "True");
    },
  },
  {
    name: "a pod deleted on a disconnected node stays Terminating until the node returns",
    async run(target, kube) {
      const ns = "e2e-delete-while-cut";
      const node = target.nodes[target.nodes.length - 1];
      const before = (await readyDaemonSet(target, kube, ns)).get(node)!;
      await whileDisconnected(target, kube, node, async () => {
        await kube.run(["--namespace", ns, "delete", "pod", before.metadata.name, "--wait=false"]);
        // Longer than the grace period: only the node's kubelet may confirm the delete.
        await new Promise((resolve) => setTimeout(resolve, 8_000));
        const pods = await kube.pods(ns, "app=agent");
        const pending = pods.find((p) => p.metadata.uid === before.metadata.uid);
        if (!pending) throw new AssertionError("the pod was removed while its node was cut off");
        assert(pending.metadata.deletionTimestamp, "the pod is not marked for deletion");
      });
      const replacement = await eventually(`a new Ready pod on ${node}`, async () => {
        const pods = await kube.pods(ns, "app=agent");
        if (pods.some((p) => p.metadata.uid === before.metadata.uid)) return undefined;
        const pod = podsByNode(pods).get(node);
        return pod && conditionStatus(pod, "Ready") === "True" ? pod : undefined;
      });
      assertNotEquals(replacement.metadata.uid, before.metadata.uid);
    },
  },
  {
    name: "a node that reports NotReady is tainted, and untainted when Ready again",
    async run(target, kube) {
      const node = target.nodes[0];
      await target.notready(node);
      try {
        const notReady = await kube.nodeReady(node, (status) => status === "False");
        assertEquals(conditionStatus(notReady, "Ready"), "False");
        await eventually(`${node}'s not-ready taint`, async () => {
          const n = await kube.node(node);
          return n.spec.taints?.some((t) => t.key === "node.kubernetes.io/not-ready") || undefined;
        });
      } finally {
        await target.ready(node);
      }
      await kube.nodeReady(node, (status) => status === "True");
      await eventually(`${node}'s not-ready taint to go`, async () => {
        const n = await kube.node(node);
        return n.spec.taints?.some((t) => t.key === "node.kubernetes.io/not-ready")
          ? undefined
          : true;
      });
    },
  },
  {
    name: "a container image changed in place reports the new image, imageID and a restart",
    async run(target, kube) {
      const ns = "e2e-in-place";
      await kube.createNamespace(ns);
      // Admission refuses pods until the namespace's default ServiceAccount exists.
      await eventually("the pod to be admitted", () =>
        kube.apply({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: "agent", namespace: ns, labels: { app: "agent" } },
          spec: { nodeName: target.nodes[0], containers: [{ name: "agent", image: image("v1") }] },
        }));
      const readyPod = (version: string) =>
        eventually(`the pod Ready on ${version}`, async () => {
          const [pod] = await kube.pods(ns, "app=agent");
          return pod?.status?.containerStatuses?.[0]?.image === image(version) &&
              conditionStatus(pod, "Ready") === "True"
            ? pod
            : undefined;
        });
      const before = await readyPod("v1");
      const oldImageId = assertRunningImage(before, image("v1"));
      await kube.run([
        "--namespace",
        ns,
        "patch",
        "pod",
        "agent",
        "--type=json",
        `--patch=${
          JSON.stringify([{
            op: "replace",
            path: "/spec/containers/0/image",
            value: image("v2"),
          }])
        }`,
      ]);
      const after = await readyPod("v2");
      assertEquals(after.metadata.uid, before.metadata.uid);
      assertNotEquals(assertRunningImage(after, image("v2")), oldImageId);
      assertEquals(after.status?.containerStatuses?.[0].restartCount, 1);
    },
  },
  {
    name: "a pod with a readiness gate is Ready only while the gate's condition is True",
    async run(target, kube) {
      const ns = "e2e-readiness-gate";
      const gate = "example.com/gate";
      await kube.createNamespace(ns);
      const pod = (version: string) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "gated", namespace: ns, labels: { app: "gated" } },
        spec: {
          nodeName: target.nodes[0],
          readinessGates: [{ conditionType: gate }],
          containers: [{ name: "agent", image: image(version) }],
        },
      });
      // Admission refuses pods until the namespace's default ServiceAccount exists.
      await eventually("the pod to be admitted", () => kube.apply(pod("v1")));
      const condition = (p: Pod, type: string) =>
        p.status?.conditions?.find((c) => c.type === type);
      // The gate's condition as another controller writes it (Kruise, edgeroll's --kruise mode).
      const setGate = (status: string) =>
        kube.run([
          ...patchArgs(ns, "pod", "gated", "strategic", {
            status: { conditions: [{ type: gate, status }] },
          }),
          "--subresource=status",
        ]);
      /** The pod once its containers run `version` and are ready, and `ready` says yes. */
      const running = (version: string, what: string, ready: (p: Pod) => boolean) =>
        eventually(`the pod on ${version}, ${what}`, async () => {
          const [p] = await kube.pods(ns, "app=gated");
          const container = p?.status?.containerStatuses?.[0];
          return p?.status?.phase === "Running" && container?.image === image(version) &&
              container.ready && conditionStatus(p, "ContainersReady") === "True" && ready(p)
            ? p
            : undefined;
        });
      const notReadyBecause = (message: string) => (p: Pod) => {
        const ready = condition(p, "Ready");
        return ready?.status === "False" && ready.reason === "ReadinessGatesNotReady" &&
          ready.message === message;
      };
      const missing = `corresponding condition of pod readiness gate "${gate}" does not exist.`;
      const closed = `the status of pod readiness gate "${gate}" is not "True", but False`;

      // Its containers run and are ready, the pod is not: no one has written the gate's condition.
      await running("v1", "held back by the missing gate", notReadyBecause(missing));
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const held = await running("v1", "still held back", notReadyBecause(missing));
      assertEquals(condition(held, gate), undefined);

      await setGate("True");
      const open = await running("v1", "Ready", (p) => conditionStatus(p, "Ready") === "True");
      assertEquals(condition(open, "Ready")?.reason, undefined, "Ready True keeps a reason");
      assertEquals(conditionStatus(open, gate), "True");

      await setGate("False");
      const shut = await running("v1", "Ready no more", notReadyBecause(closed));
      assertEquals(conditionStatus(shut, gate), "False");

      // Kruise's in-place update: the gate is shut, the image changes, the kubelet restarts the
      // container and reports it; the gate's condition outlives those writes and Ready stays False.
      await kube.run([
        ...patchArgs(ns, "pod", "gated", "json", [
          { op: "replace", path: "/spec/containers/0/image", value: image("v2") },
        ]),
      ]);
      const updated = await running("v2", "held back by the shut gate", notReadyBecause(closed));
      assertEquals(updated.status?.containerStatuses?.[0].restartCount, 1);
      assertEquals(conditionStatus(updated, gate), "False");

      await setGate("True");
      const reopened = await running("v2", "Ready", (p) => conditionStatus(p, "Ready") === "True");
      assertEquals(reopened.metadata.uid, held.metadata.uid);
      assertEquals(conditionStatus(reopened, gate), "True");
    },
  },
  {
    name: "a watch resumes from a resourceVersion and replays only what came after it",
    async run(_target, kube) {
      const ns = "e2e-watch";
      await kube.createNamespace(ns);
      const create = (name: string) =>
        kube.run(["--namespace", ns, "create", "configmap", name, `--from-literal=name=${name}`]);
      await create("first");
      // The raw list: `kubectl get -o json` wraps items in a List of its own with no resourceVersion.
      const listed = JSON.parse(
        await kube.run(["get", "--raw", `/api/v1/namespaces/${ns}/configmaps`]),
      ) as { metadata: { resourceVersion: string } };
      assert(listed.metadata.resourceVersion, "the list carries no resourceVersion");
      await create("second");
      await create("third");

      const watchFrom = async (resourceVersion: string) => {
        const raw = await kube.run([
          "get",
          "--raw",
          `/api/v1/namespaces/${ns}/configmaps?watch=true&timeoutSeconds=2&resourceVersion=${resourceVersion}&fieldSelector=metadata.name!=kube-root-ca.crt`,
        ]);
        return raw.trim().split("\n").filter((l) => l).map((l) =>
          JSON.parse(l) as {
            type: string;
            object: { metadata: { name: string; resourceVersion: string } };
          }
        );
      };
      const replayed = await watchFrom(listed.metadata.resourceVersion);
      assertEquals(replayed.map((e) => `${e.type} ${e.object.metadata.name}`), [
        "ADDED second",
        "ADDED third",
      ]);
      await create("fourth");
      const resumed = await watchFrom(replayed[1].object.metadata.resourceVersion);
      assertEquals(resumed.map((e) => `${e.type} ${e.object.metadata.name}`), ["ADDED fourth"]);
    },
  },
];
