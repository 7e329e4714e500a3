/**
 * What the benchmarks that roll a set on a simulator process share: reading its JSON, changing
 * its speed, and waiting for a rollout that the pods themselves confirm.
 */
import * as k8s from "@kubernetes/client-node";
import { edgerollCrds } from "../api/crd.ts";
import { adsResource } from "../tests/controller-on-sim.ts";
import type { SimProcess } from "../tests/processes.ts";

export async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return await response.json() as T;
}

export async function setSpeed(sim: SimProcess, speed: number) {
  const response = await fetch(`${sim.url}/sim/v1/faults`, {
    method: "PUT",
    body: JSON.stringify({ speed }),
  });
  await response.body?.cancel();
}

interface Pod {
  metadata: { deletionTimestamp?: string };
  spec: { containers: { image: string }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

/**
 * Polls the set's status (one cheap GET) until it reports Complete for `generation` on all
 * `nodes`; then checks the pods themselves, so a status that lies cannot end the wait.
 */
export async function untilRolledOut(
  sim: SimProcess,
  nodes: number,
  generation: number,
  image: string,
  timeoutMs: number,
): Promise<void> {
  const setUrl =
    `${sim.url}/apis/${adsResource.group}/${adsResource.version}/namespaces/default/${adsResource.plural}/agent`;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // deno-lint-ignore no-explicit-any -- the status as stored
    const { status } = await getJson<{ status?: any }>(setUrl);
    const complete = status?.observedGeneration === generation &&
      status.updatedNumberScheduled === nodes && status.numberAvailable === nodes &&
      status.conditions?.some((c: { type: string; status: string }) =>
        c.type === "Complete" && c.status === "True"
      );
    if (complete) {
      const { items } = await getJson<{ items: Pod[] }>(
        `${sim.url}/api/v1/namespaces/default/pods?labelSelector=app%3Dagent`,
      );
      const live = items.filter((p) => !p.metadata.deletionTimestamp);
      const ready = live.filter((p) =>
        p.spec.containers[0].image === image &&
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      );
      if (live.length !== nodes || ready.length !== nodes) {
        throw new Error(
          `status says Complete but ${ready.length} of ${live.length} pods run ${image} ready`,
        );
      }
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for generation ${generation} on ${nodes} nodes`);
}

/** Installs edgeroll's CRDs on the simulator; answers a client configuration for it. */
export async function installEdgerollCrds(sim: SimProcess): Promise<k8s.KubeConfig> {
  for (const body of edgerollCrds()) {
    const crd = await fetch(`${sim.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!crd.ok) throw new Error(`installing a CRD answered ${crd.status}`);
    await crd.body?.cancel();
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(sim.kubeconfigPath);
  return kc;
}
