/**
 * Cutting and healing a fake node's link on the real cluster, as a cut network looks to
 * Kubernetes (ADR 0013).
 *
 * - disconnect: we take over the node's Lease (our holder, a day long, renewTime untouched).
 *   kwok renews only Leases it holds or that expired, and leaves the node and its pods alone
 *   while it does not hold the Lease: heartbeats stop, the node lifecycle controller marks the
 *   node Unknown after its grace period, pods stay, and a deleted pod stays Terminating.
 * - reconnect: we delete the Lease; kwok creates it again, takes the node back, reports it
 *   Ready and finishes what happened meanwhile (pending deletes, NotReady pods). kwok 0.7.0 lists
 *   the node's pods the moment its create returns, but skips each one while its Lease cache does
 *   not yet show the Lease as its own (a pod left NotReady for good, twice in CI, ADR 0052). So we
 *   wait until kwok has renewed the Lease it made (it renews from that cache) and touch the node's
 *   pods once: an event kwok then plays, as a kubelet resyncs its pods' status on reconnect.
 * - notready / ready: an annotation that our kwok stages read: the kubelet keeps its Lease but
 *   reports Ready=False, or Ready=True again.
 */
import { forEachConcurrently } from "../lib/concurrently.ts";
import { kubectl } from "./kubectl.ts";

export const nodeLinkVerbs = ["disconnect", "reconnect", "notready", "ready"] as const;
export type NodeLinkVerb = typeof nodeLinkVerbs[number];

export const disconnectedHolder = "edgeroll-disconnected";
/** Written on each pod of a node when it reconnects: the event kwok may otherwise not get. */
export const relinkedAnnotation = "edgeroll.dev/node-relinked";
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
      await reconnectNodes(kubeconfigPath, [node]);
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

interface LeaseList {
  items: {
    metadata: { name: string; creationTimestamp: string };
    spec: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
  }[];
}

/**
 * Reconnects many nodes at once (one wait for all of them, as the bench heals its cut nodes):
 * deletes their Leases, waits until kwok has made and renewed each, then touches their pods.
 */
export async function reconnectNodes(kubeconfigPath: string, nodes: string[]): Promise<void> {
  await forEachConcurrently(nodes, 8, async (node) => {
    await kubectl(kubeconfigPath, [
      "--namespace=kube-node-lease",
      "delete",
      "lease",
      node,
      "--ignore-not-found",
    ]);
  });
  await renewedByKwok(kubeconfigPath, new Set(nodes));
  const stamp = new Date().toISOString();
  await forEachConcurrently(nodes, 8, async (node) => {
    await kubectl(kubeconfigPath, [
      "annotate",
      "pods",
      "--all-namespaces",
      `--field-selector=spec.nodeName=${node}`,
      "--overwrite",
      `${relinkedAnnotation}=${stamp}`,
    ]);
  });
}

/**
 * Until every node's Lease is kwok's again and renewed since kwok created it: kwok renews a
 * quarter of a Lease's duration after making it, at least 3 s here, so a renewTime 2 s past
 * the creation second is a renewal. Waits two Lease durations (once kwok's Leases are seen) and
 * at least two minutes, then names the nodes still waiting.
 */
async function renewedByKwok(kubeconfigPath: string, nodes: Set<string>): Promise<void> {
  const start = Date.now();
  let allowedMs = 120_000;
  for (;;) {
    const leases = JSON.parse(
      await kubectl(kubeconfigPath, [
        "--namespace=kube-node-lease",
        "get",
        "leases",
        "--output=json",
      ]),
    ) as LeaseList;
    const waiting = new Set(nodes);
    for (const { metadata, spec } of leases.items) {
      if (!nodes.has(metadata.name) || !spec.holderIdentity) continue;
      if (spec.holderIdentity === disconnectedHolder || !spec.renewTime) continue;
      allowedMs = Math.max(allowedMs, 2_000 * (spec.leaseDurationSeconds ?? 0));
      const renewedAfterMs = Date.parse(spec.renewTime) - Date.parse(metadata.creationTimestamp);
      if (renewedAfterMs >= 2_000) waiting.delete(metadata.name);
    }
    if (waiting.size === 0) return;
    if (Date.now() - start > allowedMs) {
      throw new Error(
        `kwok did not take back and renew the Lease of ${[...waiting].slice(0, 10).join(", ")}` +
          `${waiting.size > 10 ? ` and ${waiting.size - 10} more` : ""} (kube-node-lease)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
