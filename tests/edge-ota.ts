/**
 * What every run of the edge agent is checked against, whichever runtime serves it (`deno run`
 * or the Node single executable): an OTA DaemonSet on a simulated cluster, a pod marked for
 * upgrade, and the agent asked, as its node's owner asks, to list and upgrade.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { conditionStatus, eventually, type Kube, type Pod } from "./e2e/kube.ts";

export const otaNamespace = "default";
const image = (version: string) => `edgeroll.test/ota-agent:${version}`;

/** An `apps/v1` DaemonSet `ota-agent` in OpenYurt's OTA mode (OnDelete, the annotation). */
export function otaDaemonSet(namespace: string, image: string) {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "ota-agent",
      namespace,
      annotations: { "apps.openyurt.io/update-strategy": "OTA" },
    },
    spec: {
      selector: { matchLabels: { app: "ota-agent" } },
      updateStrategy: { type: "OnDelete" },
      template: {
        metadata: { labels: { app: "ota-agent" } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "agent", image }],
        },
      },
    },
  };
}

const live = (pods: Pod[]) => pods.filter((p) => !p.metadata.deletionTimestamp);

/**
 * The set on v1 everywhere, then moved to v2, every pod marked `PodNeedUpgrade` True as the
 * controller marks them (the controller itself is e2e's business). Answers the pods by node.
 */
export async function seedOtaUpgrade(kube: Kube, nodes: string[]): Promise<Map<string, Pod>> {
  await kube.apply(otaDaemonSet(otaNamespace, image("v1")));
  const pods = await eventually("one ota-agent pod per node", async () => {
    const found = live(await kube.pods(otaNamespace, "app=ota-agent"));
    return found.length === nodes.length ? found : undefined;
  });
  await kube.apply(otaDaemonSet(otaNamespace, image("v2")));
  for (const pod of pods) {
    await kube.run([
      "--namespace",
      otaNamespace,
      "patch",
      "pod",
      pod.metadata.name,
      "--subresource=status",
      "--type=strategic",
      "-p",
      JSON.stringify({
        status: {
          conditions: [{
            type: "PodNeedUpgrade",
            status: "True",
            message: "controllerrevision: v2",
          }],
        },
      }),
    ]);
  }
  return new Map(pods.map((p) => [p.spec.nodeName ?? "", p]));
}

/**
 * The agent at `url`, serving `node`, checked route by route as a node's owner calls it: with
 * no token on loopback (as YurtHub), or with `token` when the agent was given one.
 */
export async function exerciseEdgeAgent(
  kube: Kube,
  agent: { url: string; token?: string; node: string },
  byNode: Map<string, Pod>,
): Promise<void> {
  const authorization = agent.token ? { authorization: `Bearer ${agent.token}` } : undefined;
  const call = async (path: string, method = "GET", auth = true) => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: auth ? authorization : undefined,
    });
    const text = await res.text();
    return { status: res.status, text, age: res.headers.get("age") };
  };
  const upgrade = (pod: Pod) =>
    call(`/openyurt.io/v1/namespaces/${otaNamespace}/pods/${pod.metadata.name}/upgrade`, "POST");

  assertEquals((await call("/healthz", "GET", false)).status, 200);
  if (agent.token) {
    const refused = await call("/pods", "GET", false);
    assertEquals([refused.status, refused.text], [401, "a bearer token is required"]);
  }
  const ours = byNode.get(agent.node)!;
  // From the agent's cache, which fills as its watch sees the pods.
  const listed = await eventually(`the ${agent.node} pod in GET /pods`, async () => {
    const answer = await call("/pods");
    assertEquals([answer.status, answer.age], [200, "0"], answer.text);
    const uids = JSON.parse(answer.text).items.map((p: Pod) => p.metadata.uid);
    return uids.includes(ours.metadata.uid) ? uids : undefined;
  });
  assertEquals(listed, [ours.metadata.uid]);
  const [otherNode, other] = [...byNode].find(([node]) => node !== agent.node)!;
  const refused = await upgrade(other);
  assertEquals(refused.status, 403);
  assertStringIncludes(refused.text, `Pre check update pod failed, Failed to check pod`);
  assertStringIncludes(refused.text, `${otaNamespace}/${other.metadata.name}`);

  assertEquals(await upgrade(ours), {
    status: 200,
    text: `Start updating pod ${otaNamespace}/${ours.metadata.name}`,
    age: null,
  });
  const replaced = await eventually(`a v2 pod on ${agent.node}`, async () => {
    const now = live(await kube.pods(otaNamespace, "app=ota-agent"))
      .find((p) => p.spec.nodeName === agent.node);
    return now && now.metadata.uid !== ours.metadata.uid ? now : undefined;
  });
  assertEquals(replaced.spec.containers[0].image, image("v2"));
  // The other node's pod was not touched.
  const still = live(await kube.pods(otaNamespace, "app=ota-agent"))
    .find((p) => p.spec.nodeName === otherNode);
  assertEquals([still?.metadata.uid, conditionStatus(still!, "PodNeedUpgrade")], [
    other.metadata.uid,
    "True",
  ]);
}

/**
 * As edgeroll marks an OTA set's pods (the controller must be running): `PodNeedUpgrade` False
 * on one pod per node, then the set's image moved to `next`, then True on every one of those
 * pods. Answers the marked pods.
 */
/** `kubectl set image` of the OTA DaemonSet's one container, as its owner moves it on. */
export const setOtaImage = (kube: Kube, ns: string, image: string) =>
  kube.run(["--namespace", ns, "set", "image", "daemonset/ota-agent", `agent=${image}`]);

export async function otaPodsMarked(
  kube: Kube,
  ns: string,
  nodeCount: number,
  next: string,
  wait: <T>(what: string, probe: () => Promise<T | undefined>) => Promise<T>,
): Promise<Pod[]> {
  const marked = (status: string) => async () => {
    const pods = live(await kube.pods(ns, "app=ota-agent"));
    return pods.length === nodeCount &&
        pods.every((p) => conditionStatus(p, "PodNeedUpgrade") === status)
      ? pods
      : undefined;
  };
  await wait("PodNeedUpgrade False on every OTA pod", marked("False"));
  await setOtaImage(kube, ns, next);
  return await wait("PodNeedUpgrade True on every OTA pod", marked("True"));
}
