/**
 * OpenYurt's OTA upgrade API (YurtHub's `otaupdate` handlers, written again): the node's owner
 * lists pods, sees `PodNeedUpgrade`, and asks for one pod to be upgraded. The upgrade deletes
 * the pod with a UID precondition; the DaemonSet controller (OnDelete) recreates it at the new
 * revision. Served by the controller for a fleet operator (every node) and by the edge agent
 * for its own node only (`node`).
 */
import type { Hono, MiddlewareHandler } from "hono";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import type { Logger } from "../lib/log.ts";
import { readOpenYurtRollout } from "../api/openyurt.ts";
import { type DaemonSet, Keys, type Pod } from "../api/kube-objects.ts";
import type { KubeMethod } from "../kube/api.ts";
import { KubeError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/objects.ts";
import { labelSelectorString } from "../kube/selector.ts";
import { HttpError } from "./errors.ts";
import { dnsName, rejectInvalid } from "./params.ts";
import { listManagedSets } from "../controller/tick.ts";

export interface OtaDeps {
  kube: KubeClient;
  logger: Logger;
  /** Checks the bearer token: every OTA route reads pod specs or deletes pods. */
  guard: MiddlewareHandler;
  /** The edge agent's node: only its pods are listed and upgraded. Absent in the controller. */
  node?: string;
  /**
   * How long a route waits for the API server before answering 503 (ms; default 10 s). A node
   * cut off from the cloud may get no answer at all rather than a refused connection.
   */
  deadlineMs?: number;
}

/**
 * The Kubernetes calls the OTA routes make on the edge agent (`node` set): list the node's
 * pods (field selector `spec.nodeName`), read one, delete it. Exactly what the API server's Node
 * authorizer and NodeRestriction allow the node's own credentials, which the agent uses
 * (manifests/edge-agent; tests/rbac.test.ts). On the controller, the upgrade also reads the
 * DaemonSet and `GET /pods` lists sets.
 */
export const edgeOtaCalls: readonly KubeMethod[] = ["listPods", "getPod", "deletePod"];

/** OpenYurt's condition set by its image pre-pull controller; honoured when present. */
export const podImageReady = "PodImageReady";

const PodParams = z.object({ ns: dnsName.max(63), pod: dnsName });
const PodsQuery = z.object({ node: dnsName.optional() });

function condition(pod: Pod, type: string) {
  return pod.status?.conditions?.find((c) => c.type === type);
}

/** Rejects with 503 when `work` has not settled after `ms`: the node may be cut off. */
async function withinDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new HttpError(
            503,
            "KubernetesUnavailable",
            `the Kubernetes API did not answer within ${ms / 1000} s`,
            { retryable: true },
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

const refused = (message: string) => new HttpError(403, "PreCheckFailed", message);

/**
 * YurtHub's pre-checks: the pod is not being deleted, runs on this agent's node, is controlled
 * by a DaemonSet, has `PodNeedUpgrade` True, and, where OpenYurt's pre-pull controller has set
 * `PodImageReady`, its image is ready for that same revision. The controller (no `node`) also
 * reads the DaemonSet and checks it is still in OTA mode; the edge agent, with its node's
 * credentials, may not read DaemonSets and trusts the mark edgeroll wrote, as YurtHub does.
 */
async function preCheck(kube: KubeClient, pod: Pod, node: string | undefined): Promise<void> {
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
  if (node === undefined) {
    const set = await kube.readSet({ kind: "daemonsets", namespace, name: owner.name });
    if (!set || set.metadata.uid !== owner.uid) {
      throw refused(`${what}: its DaemonSet ${namespace}/${owner.name} no longer exists`);
    }
    const rollout = readOpenYurtRollout(set as unknown as DaemonSet);
    if (!rollout.managed || !rollout.ok || rollout.rollout.mode !== "OTA") {
      throw refused(
        `${what}: DaemonSet ${namespace}/${owner.name} is not in OTA mode (annotation apps.openyurt.io/update-strategy: OTA, updateStrategy OnDelete)`,
      );
    }
  }
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

/** `kind: PodList` as the API server and YurtHub's `GET /pods` write it. */
function podList(items: KubeObject[], resourceVersion = "") {
  return { kind: "PodList", apiVersion: "v1", metadata: { resourceVersion }, items };
}

/** Pods of every DaemonSet in OTA mode, on `node` if given. */
async function otaPods(kube: KubeClient, node: string | undefined): Promise<KubeObject[]> {
  const sets = (await listManagedSets(kube)).sets.filter(({ ref, object }) => {
    if (ref.kind !== "daemonsets") return false;
    const rollout = readOpenYurtRollout(object as unknown as DaemonSet);
    return rollout.managed && rollout.ok && rollout.rollout.mode === "OTA";
  });
  const lists = await Promise.all(sets.map(async ({ ref, object }) => {
    const spec = object.spec as DaemonSet["spec"];
    const { items } = await kube.api.listPods({
      namespace: ref.namespace,
      labelSelector: labelSelectorString(spec.selector),
      nodeName: node,
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
async function readPodAsAgent(
  kube: KubeClient,
  ns: string,
  name: string,
  node: string | undefined,
): Promise<Pod | undefined> {
  try {
    return await kube.readPod(ns, name);
  } catch (err) {
    if (node !== undefined && err instanceof KubeError && err.status === 403) {
      throw refused(
        `pod ${ns}/${name} is not bound to node ${node} (the API server: ${err.message})`,
      );
    }
    throw err;
  }
}

/** Adds `GET /pods` (and its OpenYurt alias) and the upgrade and imagepull routes to `app`. */
export function registerOtaRoutes(app: Hono, deps: OtaDeps): void {
  const { kube, logger, guard, node } = deps;
  const deadline = <T>(work: Promise<T>) => withinDeadline(work, deps.deadlineMs ?? 10_000);

  const listPods = zValidator("query", PodsQuery, rejectInvalid);
  for (const path of ["/pods", "/openyurt.io/v1/pods"]) {
    app.get(path, guard, listPods, async (c) => {
      const asked = c.req.valid("query").node;
      if (node === undefined) return c.json(podList(await deadline(otaPods(kube, asked))));
      if (asked !== undefined && asked !== node) {
        throw new HttpError(403, "Forbidden", `this agent serves node ${node} only, not ${asked}`);
      }
      // As YurtHub: every pod on the node, whoever controls it.
      const { items, resourceVersion } = await deadline(kube.api.listPods({ nodeName: node }));
      return c.json(podList(items, resourceVersion));
    });
  }

  const podParams = zValidator("param", PodParams, rejectInvalid);
  app.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/upgrade", guard, podParams, async (c) => {
    const { ns, pod: name } = c.req.valid("param");
    await deadline((async () => {
      const pod = await readPodAsAgent(kube, ns, name, node);
      if (!pod) throw new HttpError(404, "NotFound", `pod ${ns}/${name} not found`);
      await preCheck(kube, pod, node);
      // The UID precondition: a pod recreated under this name since the check is not deleted.
      await kube.api.deletePod({ namespace: ns, name, uid: pod.metadata.uid ?? "" });
      logger.info("OTA upgrade started", {
        pod: `${ns}/${name}`,
        node: pod.spec.nodeName,
        revision: condition(pod, Keys.podNeedUpgrade)?.message,
      });
    })());
    return c.text(`Start updating pod ${ns}/${name}`);
  });

  // YurtHub marks PodImageReady False and leaves the pull to yurt-manager's image pre-pull
  // controller, which runs a Job on the node. edgeroll has no such puller: saying so is
  // better than a mark nothing would ever clear, which would then block the upgrade.
  app.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/imagepull", guard, podParams, (c) => {
    const { ns, pod } = c.req.valid("param");
    throw new HttpError(
      501,
      "NotImplemented",
      `image pre-pull is not supported by edgeroll (pod ${ns}/${pod}): the new pod pulls its image when the upgrade starts`,
    );
  });
}
