/**
 * cluster/control-plane.ts on the real control plane: `deno task test:cluster` builds it, then
 * runs this beside the e2e suite. (Not named *.test.ts: `deno task test` builds nothing, and
 * cluster/'s *.test.ts check only what needs no binary.)
 */
import { assert, assertEquals, assertFalse, assertNotEquals, assertRejects } from "@std/assert";
import {
  downCluster,
  nodeKubeconfig,
  readState,
  startApiServer,
  stopApiServer,
  upCluster,
} from "./control-plane.ts";
import { kubectl, KubectlError, kubectlJson } from "./kubectl.ts";
import { isAlive } from "./processes.ts";

const readyz = ["get", "--raw=/readyz"];

/** kubectl's words for ECONNREFUSED: "The connection to the server … was refused". */
function assertRefused(kubeconfigPath: string): Promise<KubectlError> {
  return assertRejects(() => kubectl(kubeconfigPath, readyz), KubectlError, "was refused");
}

Deno.test("kube-apiserver stops alone and starts again on its port, with what etcd kept", async () => {
  const state = await upCluster({ nodes: 1 });
  try {
    const admin = state.kubeconfigPath;
    const node = await nodeKubeconfig(state, state.nodes[0]);
    await kubectl(admin, ["create", "configmap", "before-stop", "--from-literal=kept=yes"]);
    const apiserverOf = () => state.processes.find((p) => p.name === "kube-apiserver")!;
    const stopped = apiserverOf();

    await stopApiServer(state);
    await assertRefused(admin);
    await assertRefused(node);
    const starting = performance.now();
    await startApiServer(state);
    console.log(
      `kube-apiserver ready ${Math.round(performance.now() - starting)} ms after its start`,
    );

    const configMap = await kubectlJson<{ data?: Record<string, string> }>(admin, [
      "get",
      "configmap",
      "before-stop",
    ]);
    assertEquals(configMap.data, { kept: "yes" });
    assertEquals((await kubectl(node, readyz)).trim(), "ok");
    for (const process of state.processes) assert(await isAlive(process), `${process.name} runs`);
    // The scheduler and kwok found the API server again: a new pod is bound and runs.
    await kubectl(admin, ["run", "after-restart", "--image=example.com/app:1", "--restart=Never"]);
    await kubectl(admin, ["wait", "--for=condition=Ready", "--timeout=90s", "pod/after-restart"]);

    const apiserver = apiserverOf();
    assertNotEquals(apiserver.pid, stopped.pid);
    assertEquals(await readState(), state);
    await downCluster();
    assertFalse(await isAlive(apiserver));
  } finally {
    await downCluster();
  }
});
