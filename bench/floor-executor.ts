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
import { clientNodeWatch } from "../kube/watcher.ts";

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
// client-node's Watch, its own silent end reported (kube/watcher.ts): a quiet watch would end
// unseen, and with nothing left to wait for the process would exit.
const watch = clientNodeWatch(kc);

const log = (msg: string, fields: Record<string, unknown> = {}) =>
  console.error(JSON.stringify({ ts: new Date().toISOString(), msg, ...fields }));

/** The set's pod template as last seen, and the live pods by name. */
let template: k8s.V1PodTemplateSpec | undefined;
const pods = new Map<string, k8s.V1Pod>();
/** Nodes whose new pod was asked for and is not yet seen Ready. */
const inFlight = new Set<string>();
let readyNodes: string[] = [];
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

async function readNodes() {
  const list = await core.listNode();
  budget = Math.max(1, Math.ceil(list.items.length * percent / 100));
  readyNodes = list.items.filter((n) =>
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
    // Given back: the next pass tries the node again.
    inFlight.delete(node);
    log("replace failed", { node, error: (err as Error).message });
  }
}

/** Fills the free slots with nodes whose pod is missing or old. */
function fill() {
  if (!template) return;
  const image = imageOf(template.spec);
  const byNode = new Map<string, k8s.V1Pod[]>();
  for (const pod of pods.values()) {
    if (pod.metadata?.deletionTimestamp) continue;
    const node = pod.spec?.nodeName ?? "";
    byNode.set(node, [...byNode.get(node) ?? [], pod]);
  }
  for (const node of [...inFlight]) {
    if (byNode.get(node)?.some((p) => imageOf(p.spec) === image && isReady(p))) {
      inFlight.delete(node);
    }
  }
  for (const node of readyNodes) {
    if (inFlight.size >= budget) return;
    if (inFlight.has(node)) continue;
    const here = byNode.get(node) ?? [];
    if (here.some((p) => imageOf(p.spec) === image)) continue;
    replace(node, here[0], image).then(fill);
  }
}

/**
 * Keeps a watch of `path` going: client-node ends one after 30 s without an event, and the API
 * server after its timeout. Each start lists first (`list`), so nothing between two is missed.
 */
function keepWatching<T>(
  what: string,
  path: string,
  params: Record<string, string>,
  list: () => Promise<string | undefined>,
  onEvent: (type: string, object: T) => void,
) {
  const start = async (): Promise<void> => {
    try {
      const resourceVersion = await list();
      await watch(
        path,
        { ...params, ...(resourceVersion ? { resourceVersion } : {}) },
        (type, object) => onEvent(type, object as T),
        () => setTimeout(start, 100),
      );
    } catch (err) {
      log(`${what} watch failed, again in 1 s`, { error: (err as Error).message });
      setTimeout(start, 1000);
    }
  };
  return start();
}

async function watchAll() {
  const labelSelector = `app=${name}`;
  await keepWatching<k8s.V1Pod>(
    "pod",
    `/api/v1/namespaces/${namespace}/pods`,
    { labelSelector },
    async () => {
      const listed = await core.listNamespacedPod({ namespace, labelSelector });
      pods.clear();
      for (const pod of listed.items) pods.set(pod.metadata!.name!, pod);
      return listed.metadata?.resourceVersion;
    },
    (type, pod) => {
      if (type === "DELETED") pods.delete(pod.metadata!.name!);
      else pods.set(pod.metadata!.name!, pod);
      fill();
    },
  );
  await keepWatching<k8s.V1DaemonSet>(
    "set",
    `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
    { fieldSelector: `metadata.name=${name}` },
    () => Promise.resolve(undefined), // a watch from now begins with the set as it is
    (type, set) => {
      if (type === "DELETED") return void (template = undefined);
      const next = set.spec!.template;
      if (imageOf(next.spec) === imageOf(template?.spec)) return;
      template = next;
      readNodes().then(() => {
        log("rolling", { image: imageOf(next.spec), nodes: readyNodes.length, budget });
        fill();
      }, (err) => log("nodes not read", { error: (err as Error).message }));
    },
  );
}

Deno.addSignalListener("SIGTERM", () => Deno.exit(0));
await watchAll();
log("watching", { namespace, name });
