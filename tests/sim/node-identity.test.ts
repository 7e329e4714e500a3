/**
 * A node's own identity on the simulator: its kubeconfig reaches the API server through the
 * node's link, so cutting the node (admin API) cuts whatever runs on it with those credentials,
 * as a real edge node's agents lose the cloud with it; the admin's link stays up.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals } from "@std/assert";
import { clientNodeApi } from "../../kube/api.ts";
import { KubeError, toKubeError } from "../../kube/errors.ts";
import { request, withSim } from "./helpers.ts";

async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (err) {
    const e = toKubeError(err, "test");
    return `${e.status} ${e.reason}`;
  }
}

Deno.test("sim: a node's credentials go through its link; disconnect cuts them, reconnect heals", async () => {
  await withSim({ nodes: 2 }, async (sim, adminKc) => {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(await sim.nodeKubeconfig("edge-1"));
    const asNode = clientNodeApi(kc);
    const admin = clientNodeApi(adminKc);
    const ownPods = () => asNode.listPods({ nodeName: "edge-1" });

    assertEquals(await outcome(ownPods()), "ok");
    // The Node authorizer's answer, over the node's own link.
    assertEquals(await outcome(asNode.listPods({})), "403 Forbidden");

    const cut = await request(sim, "/sim/v1/nodes/edge-1/disconnect", { method: "POST" });
    assertEquals(cut.status, 200);
    const refused = await ownPods().catch((err) => toKubeError(err, "list"));
    assertEquals(refused instanceof KubeError && [refused.status, refused.reason], [
      0,
      "Unreachable",
    ]);
    // Only that node is cut: the admin and another node's identity still answer.
    assertEquals(await outcome(admin.listNodes({})), "ok");
    const other = new k8s.KubeConfig();
    other.loadFromFile(await sim.nodeKubeconfig("edge-2"));
    assertEquals(await outcome(clientNodeApi(other).listPods({ nodeName: "edge-2" })), "ok");

    await request(sim, "/sim/v1/nodes/edge-1/reconnect", { method: "POST" });
    assertEquals(await outcome(ownPods()), "ok");
  });
});
