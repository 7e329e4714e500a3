/**
 * OpenYurt's OTA upgrade (YurtHub's `otaupdate` handlers, written again): the node's owner lists
 * pods, sees `PodNeedUpgrade`, and asks for one pod to be upgraded. The upgrade deletes the pod
 * with a UID precondition; the DaemonSet controller (OnDelete) recreates it at the new revision.
 * The controller serves it for a fleet operator (every node), the edge agent for its own node
 * (`node`). `routes/ota.ts` maps it to HTTP.
 */
import type { Logger } from "../lib/log.ts";
import { readOpenYurtRollout } from "../api/openyurt.ts";
import { type DaemonSet, Keys, type Pod } from "../api/kube-objects.ts";
import type { KubeMethod } from "../kube/api.ts";
import { KubeError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/objects.ts";
import { labelSelectorString } from "../kube/selector.ts";
import { ControllerError } from "./errors.ts";
import { listManagedSets } from "./tick.ts";

export interface OtaDeps {
  kube: KubeClient;
  logger: Logger;
  /** The edge agent's node: only its pods are listed and upgraded. Absent in the controller. */
  node?: string;
  /**
   * How long a call waits for the API server before failing as Unavailable (ms; default 10 s).
   * A node cut off from the cloud may get no answer at all rather than a refused connection.
   */
  deadlineMs?: number;
}

/**
 * The Kubernetes calls OTA makes on the edge agent (`node` set): list the node's pods (field
 * selector `spec.nodeName`), read one, delete it. Exactly what the API server's Node authorizer
 * and NodeRestriction allow the node's own credentials, which the agent uses
 * (manifests/edge-agent; tests/rbac.test.ts). On the controller, the upgrade also reads the
 * DaemonSet and listing reads sets.
 */
export const edgeOtaCalls: readonly KubeMethod[] = ["listPods", "getPod", "deletePod"];

/** OpenYurt's condition set by its image pre-pull controller; honoured when present. */
export const podImageReady = "PodImageReady";

/** `kind: PodList` as the API server and YurtHub's `GET /pods` write it. */
export interface PodList {
  kind: "PodList";
  apiVersion: "v1";
  metadata: { resourceVersion: string };
  items: KubeObject[];
}

function podList(items: KubeObject[], resourceVersion = ""): PodList {
  return { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion }, items };
}

function condition(pod: Pod, type: string) {
  return pod.status?.conditions?.find((c) => c.type === type);
}

const refused = (message: string) => new ControllerError("Refused", message, "PreCheckFailed");

/** Rejects as Unavailable when `work` has not settled after `ms`: the node may be cut off. */
async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() =>
      reject(
        new ControllerError(
          "Unavailable",
          `the Kubernetes API did not answer within ${ms / 1000} s`,
          "KubernetesUnavailable",
        ),
      ), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** OTA for every node (the controller) or for one (`node`: the edge agent). */
export class Ota {
  readonly #kube: KubeClient;
  readonly #logger: Logger;
  readonly #node: string | undefined;
  readonly #deadlineMs: number;

  constructor(deps: OtaDeps) {
    this.#kube = deps.kube;
    this.#logger = deps.logger;
    this.#node = deps.node;
    this.#deadlineMs = deps.deadlineMs ?? 10_000;
  }

  /**
   * The controller: pods of OTA DaemonSets, on `asked` if given. The edge agent: every pod on
   * its node, whoever controls it, as YurtHub; another node is refused.
   */
  async pods(asked?: string): Promise<PodList> {
    const node = this.#node;
    if (node === undefined) return podList(await this.#deadline(this.#otaPods(asked)));
    if (asked !== undefined && asked !== node) {
      throw new ControllerError(
        "Refused",
        `this agent serves node ${node} only, not ${asked}`,
        "Forbidden",
      );
    }
    const listing = this.#kube.api.listPods({ nodeName: node });
    const { items, resourceVersion } = await this.#deadline(listing);
    return podList(items, resourceVersion);
  }

  /** Checks the pod as YurtHub does, then deletes it for its controller to recreate. */
  upgrade(ns: string, name: string): Promise<void> {
    return this.#deadline((async () => {
      const pod = await this.#readPod(ns, name);
      if (!pod) throw new ControllerError("NotFound", `pod ${ns}/${name} not found`);
      await this.#preCheck(pod);
      // The UID precondition: a pod recreated under this name since the check is not deleted.
      await this.#kube.api.deletePod({ namespace: ns, name, uid: pod.metadata.uid ?? "" });
      this.#logger.info("OTA upgrade started", {
        pod: `${ns}/${name}`,
        node: pod.spec.nodeName,
        revision: condition(pod, Keys.podNeedUpgrade)?.message,
      });
    })());
  }

  #deadline<T>(work: Promise<T>): Promise<T> {
    return withinDeadline(work, this.#deadlineMs);
  }

  /**
   * YurtHub's pre-checks: the pod is not being deleted, runs on this agent's node, is controlled
   * by a DaemonSet, has `PodNeedUpgrade` True, and, where OpenYurt's pre-pull controller has set
   * `PodImageReady`, its image is ready for that same revision. The controller (no `node`) also
   * reads the DaemonSet and checks it is still in OTA mode; the edge agent, with its node's
   * credentials, may not read DaemonSets and trusts the mark edgeroll wrote, as YurtHub does.
   */
  async #preCheck(pod: Pod): Promise<void> {
    const node = this.#node;
    const { namespace = "", name = "" } = pod.metadata;
    const what = `pod ${namespace}/${name}`;
    if (pod.metadata.deletionTimestamp) throw refused(`${what} is being deleted`);
    if (node !== undefined && pod.spec.nodeName !== node) {
      throw refused(`${what} runs on node ${pod.spec.nodeName ?? "(none)"}, not on ${node}`);
    }
    const owner = pod.metadata.ownerReferences?.find((o) => o.controller);
    if (owner?.kind !== "DaemonSet" || !owner.apiVersion.startsWith("apps/")) {
      throw refused(`${what} is not controlled by a DaemonSet`);
    }
    if (node === undefined) await this.#checkOwnerInOtaMode(what, namespace, owner);
    const need = condition(pod, Keys.podNeedUpgrade);
    if (need?.status !== "True") {
      throw refused(`${what} has no newer revision to upgrade to (PodNeedUpgrade is not True)`);
    }
    const image = condition(pod, podImageReady);
    if (image && (image.status !== "True" || image.message !== need.message)) {
      throw refused(
        `${what}: the image of ${
          need.message ?? "the new revision"
        } is not ready (PodImageReady ${image.status}: ${image.message ?? ""})`,
      );
    }
  }

  async #checkOwnerInOtaMode(
    what: string,
    namespace: string,
    owner: { name: string; uid: string },
  ): Promise<void> {
    const set = await this.#kube.readSet({ kind: "daemonsets", namespace, name: owner.name });
    if (!set || set.metadata.uid !== owner.uid) {
      throw refused(`${what}: its DaemonSet ${namespace}/${owner.name} no longer exists`);
    }
    if (!inOtaMode(set)) {
      throw refused(
        `${what}: DaemonSet ${namespace}/${owner.name} is not in OTA mode (annotation apps.openyurt.io/update-strategy: OTA, updateStrategy OnDelete)`,
      );
    }
  }

  /** Pods of every DaemonSet in OTA mode, on `onNode` if given (the controller's view). */
  async #otaPods(onNode: string | undefined): Promise<KubeObject[]> {
    const sets = (await listManagedSets(this.#kube)).sets.filter(({ ref, object }) =>
      ref.kind === "daemonsets" && inOtaMode(object)
    );
    const lists = await Promise.all(sets.map(async ({ ref, object }) => {
      const spec = object.spec as DaemonSet["spec"];
      const { items } = await this.#kube.api.listPods({
        namespace: ref.namespace,
        labelSelector: labelSelectorString(spec.selector),
        nodeName: onNode,
      });
      // The selector may match pods of others: keep those this set controls.
      return items.filter((pod) =>
        pod.metadata.ownerReferences?.some((o) => o.controller && o.uid === object.metadata.uid)
      );
    }));
    return lists.flat().sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(
        `${b.metadata.namespace}/${b.metadata.name}`,
      )
    );
  }

  /**
   * The pod, or undefined when it does not exist. On the edge agent the API server refuses (403)
   * a pod that is not bound to the agent's node: that is the pre-check "not on this node",
   * answered by the API server rather than by us.
   */
  async #readPod(ns: string, name: string): Promise<Pod | undefined> {
    try {
      return await this.#kube.readPod(ns, name);
    } catch (err) {
      if (this.#node !== undefined && err instanceof KubeError && err.status === 403) {
        throw refused(
          `pod ${ns}/${name} is not bound to node ${this.#node} (the API server: ${err.message})`,
        );
      }
      throw err;
    }
  }
}

function inOtaMode(set: KubeObject): boolean {
  const rollout = readOpenYurtRollout(set as unknown as DaemonSet);
  return rollout.managed && rollout.ok && rollout.rollout.mode === "OTA";
}
