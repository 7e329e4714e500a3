/** The edge agent's Kubernetes calls (kube/lean-client.ts) over any `KubeApi`, for unit tests. */
import type { Pod } from "../../api/kube-objects.ts";
import type { KubeApi } from "../../kube/api.ts";
import type { LeanKubeApi } from "../../kube/lean-client.ts";

/**
 * The edge agent's calls over the memory API, as its node's credentials reach the real one: the
 * node's pods listed; the watch sends nothing and ends when told (the list filled the cache).
 */
export function leanApiOver(api: KubeApi): LeanKubeApi {
  return {
    listNodePods: async (node) => {
      const { items, resourceVersion } = await api.listPods({ nodeName: node });
      return { items: items as Pod[], resourceVersion };
    },
    watchNodePods: ({ signal }) =>
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    getPod: async (p) => await api.getPod(p) as Pod,
    deletePod: (p) => api.deletePod(p),
    setPodCondition: async ({ namespace, name, condition }) => {
      await api.patchPodStatus({ namespace, name, patch: { status: { conditions: [condition] } } });
    },
  };
}
