/**
 * OpenYurt's OTA upgrade for a fleet operator (YurtHub's `otaupdate` handlers, written again,
 * for every node): list the pods of OTA DaemonSets, and upgrade one by deleting it with a UID
 * precondition; the DaemonSet controller (OnDelete) recreates it at the new revision. YurtHub's
 * pre-checks and answers are `ota-checks.ts`, shared with the edge agent (edge/ota.ts), which
 * serves one node from its cache. `routes/ota.ts` maps both to HTTP.
 */
import type { Logger } from "../lib/log.ts";
import { readOpenYurtRollout } from "../api/openyurt.ts";
import type { DaemonSet, Pod } from "../api/kube-objects.ts";
import { isConflict, isNotFound, isUnreachable, type KubeError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { labelSelectorString } from "../kube/selector.ts";
import { answeredWithin } from "../kube/deadline.ts";
import {
  checkUpgradable,
  markedRevision,
  OtaError,
  type OtaService,
  outsideWindow,
  ownerNotInOta,
  podNotFound,
  pullRequest,
  pullRequestedText,
} from "./ota-checks.ts";
import { listManagedSets } from "./tick.ts";
import { type MaintenanceStatus, windowGroupName, windowGroupOf } from "../api/maintenance.ts";
import { writtenStatus } from "../api/written-status.ts";

export interface OtaDeps {
  kube: KubeClient;
  logger: Logger;
  /** How long a call waits for the API server before failing as unavailable (default 10 s). */
  deadlineMs?: number;
}

/** `kind: PodList` as the API server and YurtHub's `GET /pods` write it. */
export interface PodList {
  kind: "PodList";
  apiVersion: "v1";
  metadata: { resourceVersion: string };
  items: KubeObject[];
}

/** The API server could not be reached, or could not serve: 503, as YurtHub's cut-off answer. */
function unavailable(err: unknown): OtaError | undefined {
  if (!isUnreachable(err)) return undefined;
  return new OtaError(503, `Kubernetes API unavailable, ${(err as KubeError).message}`);
}

/** OTA for every node: the controller's. */
export class Ota implements OtaService {
  readonly #kube: KubeClient;
  readonly #logger: Logger;
  readonly #deadlineMs: number;

  constructor(deps: OtaDeps) {
    this.#kube = deps.kube;
    this.#logger = deps.logger;
    this.#deadlineMs = deps.deadlineMs ?? 10_000;
  }

  /** Pods of OTA DaemonSets, on `node` if given. */
  async pods(node?: string): Promise<{ list: PodList }> {
    const items = await answeredWithin(this.#otaPods(node), this.#deadlineMs, "list pods").catch(
      (err) => {
        throw unavailable(err) ?? err;
      },
    );
    return {
      list: { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion: "" }, items },
    };
  }

  /** Checks the pod as YurtHub does, and its DaemonSet, then deletes it for it to recreate. */
  async upgrade(
    ns: string,
    name: string,
    { whenConnected }: { whenConnected: boolean },
  ): Promise<{ status: 200; text: string }> {
    if (whenConnected) {
      throw new OtaError(
        400,
        "whenConnected is served by the edge agent, which keeps the request on its node; the controller upgrades at once or answers 503",
      );
    }
    const pod = await this.#readPod(ns, name);
    if (markedRevision(pod) === undefined) await this.#refuseOutsideWindow(pod);
    const owner = checkUpgradable(pod);
    await this.#checkOwnerInOtaMode(pod, owner);
    // The UID precondition: a pod recreated under this name since the check is not deleted.
    const uid = pod.metadata.uid ?? "";
    await answeredWithin(
      this.#kube.api.deletePod({ namespace: ns, name, uid }),
      this.#deadlineMs,
      "delete pod",
    )
      .catch((err) => {
        if (isNotFound(err)) throw podNotFound(ns, name);
        this.#logger.error("OTA upgrade failed", { pod: `${ns}/${name}`, error: err.message });
        throw unavailable(err) ?? new OtaError(
          500,
          isConflict(err)
            ? "Apply update failed, the pod was replaced since it was checked"
            : "Apply update failed",
        );
      });
    this.#logger.info("OTA upgrade started", {
      pod: `${ns}/${name}`,
      node: pod.spec.nodeName,
      revision: markedRevision(pod),
    });
    return { status: 200, text: `Start updating pod ${ns}/${name}` };
  }

  /**
   * YurtHub's `imagepull`: the pod's checks, then `PodImageReady` False with its revision. The
   * set's reconcile, called by the pod's change, runs the pull Job (engine/image-pulls.ts).
   * Beyond YurtHub, its DaemonSet must be one edgeroll rolls in OTA mode: nobody else would pull.
   */
  async imagePull(ns: string, name: string): Promise<{ status: 200; text: string }> {
    const pod = await this.#readPod(ns, name);
    const request = pullRequest(pod, new Date());
    const owner = pod.metadata.ownerReferences?.find((o) => o.controller);
    if (owner?.kind !== "DaemonSet") {
      throw ownerNotInOta(pod, `the pod is not a DaemonSet's (owner ${owner?.kind ?? "none"})`);
    }
    await this.#checkOwnerInOtaMode(pod, owner);
    await answeredWithin(
      this.#kube.api.patchPodStatus({
        namespace: ns,
        name,
        patch: { metadata: { uid: pod.metadata.uid }, status: { conditions: [request] } },
      }),
      this.#deadlineMs,
      "patch pod status",
    ).catch((err) => {
      if (isNotFound(err)) throw podNotFound(ns, name);
      this.#logger.error("OTA image pull not requested", {
        pod: `${ns}/${name}`,
        error: err.message,
      });
      throw unavailable(err) ??
        new OtaError(500, `Patch pod status for imagepull failed, ${(err as Error).message}`);
    });
    this.#logger.info("OTA image pull requested", {
      pod: `${ns}/${name}`,
      node: pod.spec.nodeName,
      revision: request.message,
    });
    return { status: 200, text: pullRequestedText(ns, name) };
  }

  async #readPod(ns: string, name: string): Promise<Pod> {
    const pod = await answeredWithin(this.#kube.readPod(ns, name), this.#deadlineMs, "get pod")
      .catch((err) => {
        throw unavailable(err) ?? new OtaError(500, `Get pod failed, ${(err as Error).message}`);
      });
    if (!pod) throw podNotFound(ns, name);
    return pod;
  }

  /**
   * An unmarked pod whose DaemonSet has maintenance windows, on a node whose window the set's
   * status says is not open: refused with the window and its next opening (ADR 0054). Otherwise
   * nothing: YurtHub's own checks answer.
   */
  async #refuseOutsideWindow(pod: Pod): Promise<void> {
    const owner = pod.metadata.ownerReferences?.find((o) => o.controller && o.kind === "DaemonSet");
    const node = pod.spec.nodeName;
    if (!owner || !node) return;
    const namespace = pod.metadata.namespace ?? "";
    const read = <T>(what: string, call: Promise<T>) =>
      answeredWithin(call, this.#deadlineMs, what).catch((err) => {
        throw unavailable(err) ?? err;
      });
    const set = await read(
      "get daemonset",
      this.#kube.readSet({ kind: "daemonsets", namespace, name: owner.name }),
    );
    if (!set || set.metadata.uid !== owner.uid) return;
    const yurt = readOpenYurtRollout(set as unknown as DaemonSet);
    const rollout = yurt.managed && yurt.ok ? yurt.rollout : undefined;
    const maintenance = rollout?.maintenance;
    if (!maintenance) return;
    const [rolloutStatus, nodes] = await Promise.all([
      read("get rolloutstatus", this.#kube.readRolloutStatus({ namespace, name: owner.name })),
      read("get node", this.#kube.api.listNodes({ name: node })),
    ]);
    const status = writtenStatus("daemonsets", {
      set,
      ...(rolloutStatus ? { rolloutStatus } : {}),
    }) as { maintenance?: MaintenanceStatus } | undefined;
    const group = windowGroupOf(
      nodes.items[0]?.metadata.labels,
      maintenance,
      rollout.rolloutPlan?.plan.domainLabel,
    );
    const waiting = status?.maintenance?.groups.find((g) =>
      g.domain === group.domain && g.timeZone === group.timeZone
    );
    if (waiting && waiting.state !== "Open" && !status?.maintenance?.override) {
      throw outsideWindow(pod, {
        name: windowGroupName(group),
        state: waiting.state,
        opensAt: waiting.opensAt,
      });
    }
  }

  /** edgeroll's pre-check beyond YurtHub's: the DaemonSet still exists and is in OTA mode. */
  async #checkOwnerInOtaMode(pod: Pod, owner: { name: string; uid: string }): Promise<void> {
    const namespace = pod.metadata.namespace ?? "";
    const set = await answeredWithin(
      this.#kube.readSet({ kind: "daemonsets", namespace, name: owner.name }),
      this.#deadlineMs,
      "get daemonset",
    ).catch((err) => {
      throw unavailable(err) ?? err;
    });
    if (!set || set.metadata.uid !== owner.uid) {
      throw ownerNotInOta(pod, `its DaemonSet ${namespace}/${owner.name} no longer exists`);
    }
    if (!inOtaMode(set)) {
      throw ownerNotInOta(
        pod,
        `DaemonSet ${namespace}/${owner.name} is not in OTA mode (annotation apps.openyurt.io/update-strategy: OTA, updateStrategy OnDelete)`,
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
}

function inOtaMode(set: KubeObject): boolean {
  const rollout = readOpenYurtRollout(set as unknown as DaemonSet);
  return rollout.managed && rollout.ok && rollout.rollout.mode === "OTA";
}
