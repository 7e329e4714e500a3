/**
 * The floor of `bench:peers` (issue 34): what the API server and etcd allow a rollout on this
 * machine, with no controller logic. It reads one DaemonSet's image (no controller acts on it:
 * the bench's kube-controller-manager runs without its DaemonSet controller) and replaces each
 * Ready node's pod by a new one bound to that node, deleting the old one first, with at most
 * `--max-unavailable-percent` of the fleet's nodes in flight. A slot frees as soon as its new pod
 * is seen Ready, so the budget is never idle while a node waits. No status, no Events, no
 * revisions, no expectations beyond this process's memory: a floor, not a controller.
 *
 *   deno run -A bench/floor-executor.ts --kubeconfig K --namespace N --name peer-agent
 *                                       [--max-unavailable-percent 10]
 */
import * as k8s from "@kubernetes/client-node";
import { parseArgs } from "node:util";
import { clientNodeWatch, startWatch } from "../kube/watcher.ts";
import { createLogger } from "../lib/log.ts";
import { PodsByNode } from "./pods-by-node.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    kubeconfig: { type: "string" },
    namespace: { type: "string" },
    name: { type: "string" },
    "max-unavailable-percent": { type: "string", default: "10" },
  },
  strict: true,
});
const percent = Number(flags["max-unavailable-percent"]);
if (!flags.kubeconfig || !flags.namespace || !flags.name || !(percent > 0 && percent <= 100)) {
  console.error(
    "floor-executor: --kubeconfig, --namespace and --name are required; " +
      "--max-unavailable-percent in (0, 100]",
  );
  Deno.exit(2);
}
const namespace = flags.namespace;
const name = flags.name;

const kc = new k8s.KubeConfig();
kc.loadFromFile(flags.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
// client-node's Watch with its own silent end reported, kept going by startWatch (resumed,
// listed again, restarted after silence, with a capped backoff), as the controller's caches are.
const watch = clientNodeWatch(kc);
const logger = createLogger({}, { component: "floor-executor", namespace, set: name });

/** The set's pod template as last seen, and the live pods by name and by node. */
let template: k8s.V1PodTemplateSpec | undefined;
const pods = new PodsByNode<k8s.V1Pod>((pod) => pod.metadata!.name!);
/** Nodes whose new pod was asked for and is not yet seen Ready. */
const inFlight = new Set<string>();
/**
 * The Ready nodes to replace, in order, and how far the rollout got: each event costs the
 * executor its node alone, not a pass over the fleet (at 5,000 nodes a pass per event made the
 * floor slower than a controller).
 */
let queue: string[] = [];
let cursor = 0;
let budget = 1;

const imageOf = (spec?: k8s.V1PodSpec) => spec?.containers[0]?.image ?? "";
const isReady = (pod: k8s.V1Pod) =>
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
/** A pod name per node and image, so a new pod never meets its terminating predecessor's name. */
function podName(node: string, image: string): string {
  let hash = 0;
  for (const c of image) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return `${name}-${node}-${hash.toString(36)}`;
}

/** The Ready nodes, and the budget as a share of all nodes. */
async function readyNodes(): Promise<string[]> {
  const list = await core.listNode();
  budget = Math.max(1, Math.ceil(list.items.length * percent / 100));
  return list.items.filter((n) =>
    n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
  ).map((n) => n.metadata!.name!);
}

/** Starts the replacement of `node`'s pod: the old one deleted, the new one created at once. */
async function replace(node: string, old: k8s.V1Pod | undefined, image: string) {
  inFlight.add(node);
  try {
    if (old) {
      await core.deleteNamespacedPod({
        namespace,
        name: old.metadata!.name!,
        gracePeriodSeconds: 0,
      }).catch((err) => {
        if ((err as { code?: number }).code !== 404) throw err;
      });
    }
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { ...template!.metadata, name: podName(node, image), namespace },
        spec: { ...template!.spec!, nodeName: node },
      },
    });
  } catch (err) {
    // Given back: tried again after the nodes queued now.
    inFlight.delete(node);
    queue.push(node);
    logger.warn("replace failed", { node, error: (err as Error).message });
  }
}

/** The live (not terminating) pods on `node`. */
const livePods = (node: string) => pods.on(node).filter((p) => !p.metadata?.deletionTimestamp);

/** A node in flight is done once a pod of the image runs Ready there. */
function settle(node: string) {
  const image = imageOf(template?.spec);
  if (inFlight.has(node) && livePods(node).some((p) => imageOf(p.spec) === image && isReady(p))) {
    inFlight.delete(node);
  }
}

/** Fills the free slots with the next queued nodes whose pod is missing or old. */
function fill() {
  if (!template) return;
  const image = imageOf(template.spec);
  while (inFlight.size < budget && cursor < queue.length) {
    const node = queue[cursor++];
    if (inFlight.has(node)) continue;
    const here = livePods(node);
    if (here.some((p) => imageOf(p.spec) === image)) continue;
    replace(node, here[0], image).then(fill);
  }
}

function watchAll() {
  const labelSelector = `app=${name}`;
  startWatch(watch, {
    path: `/api/v1/namespaces/${namespace}/pods`,
    labelSelector,
    logger,
    relist: async () => {
      const listed = await core.listNamespacedPod({ namespace, labelSelector });
      pods.clear();
      for (const pod of listed.items) pods.set(pod);
      for (const node of [...inFlight]) settle(node);
      return listed.metadata!.resourceVersion!;
    },
    onEvent: (type, object) => {
      const pod = object as k8s.V1Pod;
      if (type === "DELETED") pods.delete(pod.metadata!.name!);
      else pods.set(pod);
      settle(pod.spec?.nodeName ?? "");
      fill();
    },
  });
  // No relist: a watch from now begins with the set as it is (its synthetic ADDED).
  startWatch(watch, {
    path: `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
    logger,
    onEvent: (type, object) => {
      const set = object as k8s.V1DaemonSet;
      if (set.metadata?.name !== name) return;
      if (type === "DELETED") return void (template = undefined);
      const next = set.spec!.template;
      if (imageOf(next.spec) === imageOf(template?.spec)) return;
      template = next;
      readyNodes().then((ready) => {
        queue = ready;
        cursor = 0;
        logger.info("rolling", { image: imageOf(next.spec), nodes: ready.length, budget });
        fill();
      }, (err) => logger.warn("nodes not read", { error: (err as Error).message }));
    },
  });
}

Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
watchAll();
logger.info("watching");
