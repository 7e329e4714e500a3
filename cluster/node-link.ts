/**
 * Cutting and healing a fake node's link on the real cluster, as a cut network looks to
 * Kubernetes (ADR 0013).
 *
 * - disconnect: we take over the node's Lease (our holder, a day long, renewTime untouched).
 *   kwok renews only Leases it holds or that expired, and leaves the node and its pods alone
 *   while it does not hold the Lease: heartbeats stop, the node lifecycle controller marks the
 *   node Unknown after its grace period, pods stay, and a deleted pod stays Terminating.
 * - reconnect: we delete the Lease; kwok creates it again, takes the node back, reports it
 *   Ready and finishes what happened meanwhile (pending deletes, NotReady pods).
 * - notready / ready: an annotation that our kwok stages read: the kubelet keeps its Lease but
 *   reports Ready=False, or Ready=True again.
 */
import { kubectl } from "./kubectl.ts";

export const nodeLinkVerbs = ["disconnect", "reconnect", "notready", "ready"] as const;
export type NodeLinkVerb = typeof nodeLinkVerbs[number];

export const disconnectedHolder = "edgeroll-disconnected";
export const kubeletNotReadyAnnotation = "edgeroll.dev/kubelet-not-ready";

export async function setNodeLink(
  kubeconfigPath: string,
  node: string,
  verb: NodeLinkVerb,
): Promise<void> {
  // As sim's admin API does: an unknown node is an error, whatever the verb.
  await kubectl(kubeconfigPath, ["get", "node", node, "--output=name"]).catch((err) => {
    throw new Error(
      `no node "${node}" on this cluster: ${err instanceof Error ? err.message : err}`,
    );
  });
  switch (verb) {
    case "disconnect":
      await kubectl(kubeconfigPath, [
        "--namespace=kube-node-lease",
        "patch",
        "lease",
        node,
        "--type=merge",
        `--patch=${
          JSON.stringify({
            spec: { holderIdentity: disconnectedHolder, leaseDurationSeconds: 86_400 },
          })
        }`,
      ]);
      return;
    case "reconnect":
      await kubectl(kubeconfigPath, [
        "--namespace=kube-node-lease",
        "delete",
        "lease",
        node,
        "--ignore-not-found",
      ]);
      return;
    case "notready":
      await kubectl(kubeconfigPath, [
        "annotate",
        "--overwrite",
        "node",
        node,
        `${kubeletNotReadyAnnotation}=true`,
      ]);
      return;
    case "ready":
      await kubectl(kubeconfigPath, ["annotate", "node", node, `${kubeletNotReadyAnnotation}-`]);
      return;
  }
}
