/**
 * YurtHub's OTA pre-checks and answers (pkg/yurthub/otaupdate), shared by the controller's OTA
 * routes and the edge agent's: the same order, the same status codes and the same plain-text
 * sentences, so a script written against YurtHub reads ours unchanged. Where edgeroll answers
 * with a clearer code (404 for a pod that does not exist), ADR 0017 lists it. Pure: no I/O.
 */
import type { Pod } from "../api/kube-objects.ts";
import { Keys } from "../api/well-known-names.ts";
import { podImageReady } from "../api/image-pull.ts";

/** What serves the OTA routes (routes/ota.ts): the controller, for every node, or an edge agent. */
export interface OtaService {
  /** The pods a caller may upgrade (`node`: one node's), and how old that answer may be. */
  pods(node?: string): Promise<{ list: unknown; ageSeconds?: number }>;
  /**
   * Upgrades the pod now (200), or, with `whenConnected` on a node cut off from the cloud,
   * records the request and carries it out once the link returns (202).
   */
  upgrade(
    namespace: string,
    name: string,
    options: { whenConnected: boolean },
  ): Promise<{ status: 200 | 202; text: string }>;
  /**
   * YurtHub's `imagepull`: marks the pod `PodImageReady` False with the revision it is to move
   * to; the controller's puller then pulls that revision's images on its node.
   */
  imagePull(namespace: string, name: string): Promise<{ status: 200; text: string }>;
}

/** An OTA answer that is not a success: its HTTP status and YurtHub's sentence. */
export class OtaError extends Error {
  override name = "OtaError";
  constructor(readonly status: 400 | 403 | 404 | 500 | 503, message: string) {
    super(message);
  }
}

/** YurtHub's answer while its cloud health check fails, word for word. */
export const disconnectedText = "OTA upgrade is not allowed when node is disconnected to cloud";

export const disconnected = () => new OtaError(503, disconnectedText);

/** YurtHub answers 500 "Get pod failed, <err>" for any failed read; a missing pod is 404 here. */
export const podNotFound = (ns: string, name: string) =>
  new OtaError(404, `Get pod failed, pods "${name}" not found in namespace ${ns}`);

const condition = (pod: Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type);

/** The revision a pod marked `PodNeedUpgrade` True is to move to (`controllerrevision: <hash>`). */
export function markedRevision(pod: Pod): string | undefined {
  const need = condition(pod, Keys.podNeedUpgrade);
  return need?.status === "True" ? need.message : undefined;
}

/**
 * The revision a pod waits for while its node's maintenance window is closed (`PodNeedUpgrade`
 * False with the window's reason, ADR 0054): it may be pulled now, and upgraded to in the window.
 */
export function heldRevision(pod: Pod): string | undefined {
  const need = condition(pod, Keys.podNeedUpgrade);
  return need?.status === "False" && need.reason === Keys.outsideWindow ? need.message : undefined;
}

const preCheckFailed = (detail: string) =>
  new OtaError(403, `Pre check update pod failed, ${detail}`);

/**
 * YurtHub's `checkPodStatus`: not being deleted, on `node` (an agent's), marked to upgrade; for a
 * pull (`staging`), held by its node's maintenance window will do too.
 */
function podStatusProblem(
  pod: Pod,
  node: string | undefined,
  staging = false,
): string | undefined {
  const { namespace = "", name = "" } = pod.metadata;
  const id = `${namespace}/${name}`;
  if (pod.metadata.deletionTimestamp) return `Pod ${id} is deleting, can not be updated`;
  if (node !== undefined && pod.spec.nodeName !== node) {
    return `Pod: ${id} is running on ${pod.spec.nodeName ?? ""}, can not be updated`;
  }
  const held = heldRevision(pod) !== undefined;
  if (markedRevision(pod) === undefined && !(staging && held)) {
    return notMarked(id, held ? "its node's maintenance window is closed" : undefined);
  }
  return undefined;
}

/** YurtHub's sentence for a pod not marked to upgrade, with why after it when edgeroll knows. */
const notMarked = (id: string, why?: string) =>
  `Pod: ${id} update status is False, can not be updated${why ? `: ${why}` : ""}`;

/** YurtHub's 403 for a pod whose status check failed, `problem` saying how. */
function statusCheckFailed(pod: Pod, problem: string): OtaError {
  const { namespace = "", name = "" } = pod.metadata;
  return preCheckFailed(`Failed to check pod ${namespace}/${name} status, error: ${problem}`);
}

/**
 * The pod is not marked because its node's maintenance window is closed (ADR 0054): YurtHub's
 * 403 for an unmarked pod, with the window and its next opening said after it.
 */
export function outsideWindow(
  pod: Pod,
  window: { name: string; state: string; opensAt?: string },
): OtaError {
  const { namespace = "", name = "" } = pod.metadata;
  const until = window.opensAt ? ` until ${window.opensAt}` : "";
  const closed = window.state === "CuttingOff" ? "within its cut-off before the close" : "closed";
  return statusCheckFailed(
    pod,
    notMarked(
      `${namespace}/${name}`,
      `the maintenance window of ${window.name} is ${closed}${until}`,
    ),
  );
}

/**
 * YurtHub's `imagepull` checks (`checkPodStatus` alone, no owner check) and its 403 sentence;
 * returns the condition that asks for the pull: `PodImageReady` False with the revision of the
 * pod's `PodNeedUpgrade` mark (or of the revision its maintenance window holds), no reason (a reason left from an earlier result is cleared), and
 * now as its transition time, which tells a new request from an older Job (engine/image-pulls).
 */
export function pullRequest(
  pod: Pod,
  now: Date,
  node?: string,
): { type: string; status: "False"; reason: string; message: string; lastTransitionTime: string } {
  const { namespace = "", name = "" } = pod.metadata;
  const problem = podStatusProblem(pod, node, true);
  if (problem) {
    throw new OtaError(403, `Failed to check pod status ${namespace}/${name}, error: ${problem}`);
  }
  return {
    type: podImageReady,
    status: "False",
    reason: "",
    message: (markedRevision(pod) ?? heldRevision(pod))!,
    lastTransitionTime: now.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
}

/** YurtHub's answer to an accepted `imagepull`. */
export const pullRequestedText = (namespace: string, name: string) =>
  `Image pre-pull requested for pod ${namespace}/${name}`;

/**
 * YurtHub's `preCheckUpdatePod` and owner checks, in its order: the pod is not being deleted,
 * runs on `node` (the edge agent's; the controller serves every node), is marked
 * `PodNeedUpgrade` True; where `PodImageReady` is set, the image of that same revision is ready;
 * then it has an owner and the owner is a DaemonSet (YurtHub also upgrades static pods, which
 * edgeroll does not). Throws the answer YurtHub gives; returns the DaemonSet owner.
 */
export function checkUpgradable(pod: Pod, node?: string): { name: string; uid: string } {
  const { namespace = "", name = "" } = pod.metadata;
  const id = `${namespace}/${name}`;
  const problem = podStatusProblem(pod, node);
  if (problem) throw statusCheckFailed(pod, problem);
  const revision = markedRevision(pod);
  const image = condition(pod, podImageReady);
  if (image && (image.status !== "True" || image.message !== revision)) {
    throw preCheckFailed(
      `Failed to check pod ${id} image ready, error: Pod: ${id} image is not ready, reason: ${
        image.reason ?? ""
      }, message: ${image.message ?? ""}`,
    );
  }
  const owners = pod.metadata.ownerReferences ?? [];
  if (owners.length === 0) throw new OtaError(400, "Pod has no owner references");
  const owner = owners.find((o) => o.controller) ?? owners[0];
  if (owner.kind !== "DaemonSet") {
    throw new OtaError(400, `Not support ota upgrade pod type ${owner.kind}`);
  }
  return owner;
}

/** A pre-check edgeroll adds on the controller, which may read the DaemonSet: it must be OTA. */
export function ownerNotInOta(pod: Pod, why: string): OtaError {
  return statusCheckFailed(pod, why);
}
