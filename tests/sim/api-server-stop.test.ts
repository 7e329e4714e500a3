/**
 * The simulator stopped and started again as a kube-apiserver is: meanwhile its API's port and
 * the nodes' own refuse connections; then the same ports serve all it stored.
 */
import { assertEquals, assertRejects } from "@std/assert";
import { kubectl, KubectlError, kubectlJson } from "../../cluster/kubectl.ts";
import { request, withSim } from "./helpers.ts";

const readyz = ["get", "--raw=/readyz"];

/** kubectl's words for ECONNREFUSED: "The connection to the server … was refused". */
function assertRefused(kubeconfigPath: string): Promise<KubectlError> {
  return assertRejects(() => kubectl(kubeconfigPath, readyz), KubectlError, "was refused");
}

Deno.test("sim: stopped, its API's port and the nodes' refuse; resumed, they serve what it stored", async () => {
  await withSim({ nodes: 2 }, async (sim) => {
    const edge1 = await sim.nodeKubeconfig("edge-1");
    const edge2 = await sim.nodeKubeconfig("edge-2");
    await kubectl(sim.kubeconfigPath, [
      "create",
      "configmap",
      "before-stop",
      "--from-literal=kept=yes",
    ]);
    await request(sim, "/sim/v1/nodes/edge-2/disconnect", { method: "POST" });
    const watch = await fetch(`${sim.url}/api/v1/namespaces/default/configmaps?watch=true`);
    assertEquals(sim.server.openWatches, 1);

    await sim.stopServing();
    await assertRefused(sim.kubeconfigPath);
    await assertRefused(edge1);
    assertEquals(sim.server.openWatches, 0);
    await watch.text().catch(() => {});

    await sim.resumeServing();
    const configMap = await kubectlJson<{ data?: Record<string, string> }>(sim.kubeconfigPath, [
      "get",
      "configmap",
      "before-stop",
    ]);
    assertEquals(configMap.data, { kept: "yes" });
    assertEquals((await kubectl(edge1, readyz)).trim(), "ok");
    // A node cut before the stop stays cut until reconnected.
    await assertRefused(edge2);
    await request(sim, "/sim/v1/nodes/edge-2/reconnect", { method: "POST" });
    assertEquals((await kubectl(edge2, readyz)).trim(), "ok");
  });
});

Deno.test("sim: stop() stops a simulator that has stopped serving", async () => {
  await withSim({ nodes: 1 }, async (sim) => {
    await sim.nodeKubeconfig("edge-1");
    await sim.stopServing();
  });
});
