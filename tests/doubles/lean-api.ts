/** The edge agent's Kubernetes calls (kube/lean-client.ts) over any `KubeApi`, for unit tests. */
import type { Pod } from "../../api/kube-objects.ts";
import type { KubeApi } from "../../kube/api.ts";
import type { LeanKubeApi } from "../../kube/lean-client.ts";

/** A test's hand on the watch: each pod given is sent as a MODIFIED event to the open watch. */
export interface WatchSender {
  send?: (pod: Pod) => void;
}

/**
 * The edge agent's calls over the memory API, as its node's credentials reach the real one: the
 * node's pods listed; the watch sends what `sender` is given, if anything, and ends when told
 * (the list filled the cache).
 */
export function leanApiOver(api: KubeApi, sender: WatchSender = {}): LeanKubeApi {
  return {
    listNodePods: async (node) => {
      const { items, resourceVersion } = await api.listPods({ nodeName: node });
      return { items: items as Pod[], resourceVersion };
    },
    watchNodePods: ({ signal }, onEvent) =>
      new Promise((_, reject) => {
        sender.send = (object) => onEvent({ type: "MODIFIED", object });
        signal.addEventListener("abort", () => reject(signal.reason));
      }),
    getPod: async (p) => await api.getPod(p) as Pod,
    deletePod: (p) => api.deletePod(p),
    setPodCondition: async ({ namespace, name, condition }) => {
      await api.patchPodStatus({ namespace, name, patch: { status: { conditions: [condition] } } });
    },
  };
}
