/**
 * What every run of the edge agent is checked against, whichever runtime serves it (`deno run`
 * or the Node single executable): an OTA DaemonSet on a simulated cluster, a pod marked for
 * upgrade, and the agent asked, as its node's owner asks, to list and upgrade.
 */
import { assertEquals } from "@std/assert";
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

/** The agent at `url`, serving `node`, checked route by route. */
export async function exerciseEdgeAgent(
  kube: Kube,
  agent: { url: string; token: string; node: string },
  byNode: Map<string, Pod>,
): Promise<void> {
  const authorization = `Bearer ${agent.token}`;
  const call = async (path: string, method = "GET", auth = true) => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: auth ? { authorization } : {},
    });
    const text = await res.text();
    return { status: res.status, text };
  };
  const upgrade = (pod: Pod) =>
    call(`/openyurt.io/v1/namespaces/${otaNamespace}/pods/${pod.metadata.name}/upgrade`, "POST");

  assertEquals((await call("/healthz", "GET", false)).status, 200);
  assertEquals((await call("/pods", "GET", false)).status, 401);
  const listed = await call("/pods");
  assertEquals(listed.status, 200);
  const ours = byNode.get(agent.node)!;
  assertEquals(
    JSON.parse(listed.text).items.map((p: Pod) => p.metadata.uid),
    [ours.metadata.uid],
  );
  const [otherNode, other] = [...byNode].find(([node]) => node !== agent.node)!;
  const refused = await upgrade(other);
  assertEquals(refused.status, 403);
  assertEquals(JSON.parse(refused.text).error.message.includes(`runs on node ${otherNode}`), true);

  assertEquals(await upgrade(ours), {
    status: 200,
    text: `Start updating pod ${otaNamespace}/${ours.metadata.name}`,
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
