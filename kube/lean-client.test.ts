/** The edge agent's client against the simulator over HTTP and over a node's TLS listener. */
import { assertEquals, assertRejects } from "@std/assert";
import { startSim } from "../sim/start.ts";
import { Kube } from "../tests/e2e/kube.ts";
import { otaDaemonSet } from "../tests/edge-ota.ts";
import { eventually } from "../lib/eventually.ts";
import { KubeError } from "./errors.ts";
import { LeanKubeClient, type PodWatchEvent } from "./lean-client.ts";
import { connectionFromKubeconfig } from "./lean-config.ts";

Deno.test("lean client: lists and watches a node's pods, reads one, sets a condition and deletes it by UID only, with the node's credentials over TLS", async () => {
  const sim = await startSim({ nodes: 2, speed: 20 });
  const client = new LeanKubeClient(connectionFromKubeconfig(await sim.nodeKubeconfig("edge-1")));
  const watch = new AbortController();
  try {
    const kube = new Kube(sim.kubeconfigPath);
    await kube.apply(otaDaemonSet("default", "edgeroll.test/ota-agent:v1"));
    const listed = await eventually("the node's pod listed", async () => {
      const list = await client.listNodePods("edge-1");
      return list.items.length === 1 ? list : undefined;
    });
    const [pod] = listed.items;
    assertEquals(pod.spec.nodeName, "edge-1");
    const events: PodWatchEvent[] = [];
    const watching = client.watchNodePods({
      node: "edge-1",
      resourceVersion: listed.resourceVersion,
      timeoutSeconds: 30,
      signal: watch.signal,
    }, (event) => events.push(event));
    const { namespace = "", name = "", uid = "" } = pod.metadata;
    assertEquals((await client.getPod({ namespace, name })).metadata.uid, uid);
    // A condition of its pod's status, merged by type, and only on the pod of that UID.
    const condition = { type: "PodImageReady", status: "False", message: "controllerrevision: x" };
    await client.setPodCondition({ namespace, name, uid, condition });
    const marked = await client.getPod({ namespace, name });
    const conditions = marked.status?.conditions ?? [];
    assertEquals(conditions.find((c) => c.type === "PodImageReady")?.message, condition.message);
    assertEquals(conditions.some((c) => c.type === "Ready"), true, "the kubelet's stay");
    const replaced = await assertRejects(
      () => client.setPodCondition({ namespace, name, uid: "not-its-uid", condition }),
      KubeError,
    );
    assertEquals(replaced.status, 409);
    const stale = await assertRejects(
      () => client.deletePod({ namespace, name, uid: "not-its-uid" }),
      KubeError,
    );
    assertEquals(stale.status, 409);
    await client.deletePod({ namespace, name, uid });
    await eventually(
      "the delete seen by the watch",
      () => events.some((e) => e.object.metadata.uid === uid && e.type !== "ADDED"),
    );
    // Another node's pod: the API server refuses the node's credentials.
    const other = (await kube.pods("default", "app=ota-agent")).find((p) =>
      p.spec.nodeName === "edge-2"
    )!;
    const refused = await assertRejects(
      () => client.getPod({ namespace, name: other.metadata.name }),
      KubeError,
    );
    assertEquals(refused.status, 403);
    watch.abort();
    await watching.catch(() => {/* aborted */});
  } finally {
    watch.abort();
    client.close();
    await sim.stop();
  }
});

Deno.test("lean client: no answer is a KubeError of status 0, retryable", async () => {
  const client = new LeanKubeClient({
    server: "http://127.0.0.1:1",
    source: "test",
    insecureSkipTlsVerify: false,
  });
  const err = await assertRejects(() => client.listNodePods("edge-1"), KubeError);
  assertEquals([err.status, err.reason, err.retryable], [0, "Unreachable", true]);
  client.close();
});
