/**
 * Each way a reconcile can be called, proven alone on the target: the in-process tick with no
 * relay, the relay with no tick, CloudEvents posted as Knative's ApiServerSource posts them, and
 * curl `POST /reconcile/...`; then two replicas ticking together. Each case rolls an
 * AdvancedDaemonSet and an OpenYurt AdvancedRollingUpdate DaemonSet (and in Kruise compatibility
 * mode a Kruise DaemonSet, applied as Kruise's v1alpha1 manifest) from v1 to v2, checks from a
 * watch that no more nodes than maxUnavailable were ever without an available pod and that no
 * node had two pods, and then counts the controllers' writes at rest over full ticks: none.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals } from "@std/assert";
import { conditionStatus, eventually, type Kube, type Pod } from "./kube.ts";
import type { E2eTarget } from "./target.ts";
import type { Scenario } from "./scenarios.ts";
import { type ControllerProcesses, withControllers } from "../processes.ts";
import { type NodeProxy, startNodeProxy } from "../../cluster/node-proxy.ts";
import { withKruiseMode } from "../kruise/mode.ts";
import type { SetKind } from "../../api/set-ref.ts";
import { defaultEventWindowMs } from "../../controller/controller.ts";

const image = (version: string) => `edgeroll.test/trigger-agent:${version}`;
const app = "trigger-agent";
const maxUnavailable = 1;
/** What each connection `serve` opened must carry on average, at least. */
const REQUESTS_PER_CONNECTION = 10;

function template(version: string) {
  return {
    metadata: { labels: { app } },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{ name: "agent", image: image(version) }],
    },
  };
}

/** The rollout status as the controller wrote it: its conditions and when it asked to look again. */
interface WrittenStatus {
  conditions?: { type: string; status: string }[];
  nextCheckAt?: string;
}

/** A set's rollout status wherever its kind keeps it, read as the controller reads it. */
const statusOf = async (kube: Kube, set: SetUnderTest, namespace: string) =>
  await kube.writtenStatus(set.reconcileKind, set.resource, namespace, app) as
    | WrittenStatus
    | undefined;

/** One kind of set a case rolls: how it is written, addressed and read back. */
interface SetUnderTest {
  /** The namespace's suffix. */
  name: string;
  manifest(namespace: string, version: string): unknown;
  /** Its resource as `kubectl` names it. */
  resource: string;
  /** Its kind in `POST /reconcile/:kind/...`. */
  reconcileKind: SetKind;
  /** The collection Knative's ApiServerSource would watch in a namespace, and the kind it sends. */
  watched(namespace: string): { path: string; apiVersion: string; kind: string };
}

const advancedDaemonSet: SetUnderTest = {
  name: "ads",
  manifest: (namespace, version) => ({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: app, namespace },
    spec: {
      selector: { matchLabels: { app } },
      template: template(version),
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable } },
    },
  }),
  resource: "advanceddaemonsets",
  reconcileKind: "advanceddaemonsets",
  watched: (namespace) => ({
    path: `/apis/apps.edgeroll.dev/v1alpha1/namespaces/${namespace}/advanceddaemonsets`,
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
  }),
};

const openYurtDaemonSet: SetUnderTest = {
  name: "yurt",
  manifest: (namespace, version) => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: app,
      namespace,
      annotations: {
        "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
        "apps.openyurt.io/max-unavailable": String(maxUnavailable),
      },
    },
    spec: {
      selector: { matchLabels: { app } },
      template: template(version),
      updateStrategy: { type: "OnDelete" },
    },
  }),
  resource: "daemonsets.apps",
  reconcileKind: "daemonsets",
  watched: (namespace) => ({
    path: `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
    apiVersion: "apps/v1",
    kind: "DaemonSet",
  }),
};

/** Kruise's DaemonSet as its documents write it (v1alpha1), read by edgeroll --kruise. */
const kruiseDaemonSet: SetUnderTest = {
  name: "kruise",
  manifest: (namespace, version) => ({
    apiVersion: "apps.kruise.io/v1alpha1",
    kind: "DaemonSet",
    metadata: { name: app, namespace },
    spec: {
      selector: { matchLabels: { app } },
      template: template(version),
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable } },
    },
  }),
  resource: "daemonsets.v1alpha1.apps.kruise.io",
  reconcileKind: "daemonsets.apps.kruise.io",
  watched: (namespace) => ({
    path: `/apis/apps.kruise.io/v1alpha1/namespaces/${namespace}/daemonsets`,
    apiVersion: "apps.kruise.io/v1alpha1",
    kind: "DaemonSet",
  }),
};

const isReady = (pod: Pod) => conditionStatus(pod, "Ready") === "True";

/**
 * Every pod change of a namespace, from a watch: the most nodes ever seen without an available
 * (Ready, not terminating) pod of the set, and the most live pods ever seen on one node.
 */
async function watchBudget(kube: Kube, kc: k8s.KubeConfig, namespace: string, nodes: string[]) {
  const pods = new Map<string, Pod>();
  const seen = { unavailable: 0, podsOnOneNode: 0 };
  const measure = () => {
    const live = [...pods.values()].filter((p) => !p.metadata.deletionTimestamp);
    const available = new Set(live.filter(isReady).map((p) => p.spec.nodeName));
    seen.unavailable = Math.max(seen.unavailable, nodes.filter((n) => !available.has(n)).length);
    for (const node of nodes) {
      const count = live.filter((p) => p.spec.nodeName === node).length;
      seen.podsOnOneNode = Math.max(seen.podsOnOneNode, count);
    }
  };
  // A list, then a watch from it: the budget is measured on a whole picture from the start.
  const listed = await kube.json<{ items: Pod[]; metadata: { resourceVersion: string } }>(
    ["--namespace", namespace, "get", "pods", "-l", `app=${app}`],
  );
  for (const pod of listed.items) pods.set(pod.metadata.uid, pod);
  measure();
  const started = new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${namespace}/pods`,
    { labelSelector: `app=${app}`, resourceVersion: listed.metadata.resourceVersion },
    (type: string, pod: Pod) => {
      if (type === "DELETED") pods.delete(pod.metadata.uid);
      else if (type === "ADDED" || type === "MODIFIED") pods.set(pod.metadata.uid, pod);
      measure();
    },
    () => {},
  );
  return {
    seen,
    async stop() {
      (await started).abort();
    },
  };
}

/** A set a case rolls, in its own namespace. */
interface Rolled {
  set: SetUnderTest;
  namespace: string;
}

/** How one case calls the controllers: its own loop, started after they are up. */
type Trigger = (
  target: E2eTarget,
  controllers: ControllerProcesses,
  rolled: Rolled[],
) => { stop(): Promise<void> };

const nothing: Trigger = () => ({ stop: () => Promise.resolve() });

/**
 * Repeats `work` every `ms` until stopped or until a run fails; the last run is awaited and
 * its failure thrown by `stop` (not left to reject unheard, which fails the whole module).
 */
function every(ms: number, work: () => Promise<void>): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await work();
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
  })();
  const failure = loop.then(() => undefined, (err: unknown) => ({ err }));
  return {
    async stop() {
      stopped = true;
      const failed = await failure;
      if (failed) throw failed.err;
    },
  };
}

/** A POST to a controller (the first unless `url` names another), with its token. */
export async function post(
  controllers: ControllerProcesses,
  path: string,
  init: RequestInit = {},
  url = controllers.urls[0],
): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${controllers.token}`);
  return await controllers.fetch(`${url}${path}`, {
    method: "POST",
    ...init,
    headers,
  });
}

/** A person with curl: reconcile each set, again and again, as each answer's requeue says. */
const curlReconcile: Trigger = (_target, controllers, rolled) =>
  every(500, async () => {
    for (const { set, namespace } of rolled) {
      const res = await post(controllers, `/reconcile/${set.reconcileKind}/${namespace}/${app}`);
      const body = await res.json();
      assertEquals(res.status, 200, JSON.stringify(body));
    }
  });

/**
 * Knative's ApiServerSource in Resource mode: one binary-mode CloudEvent per watch event of the
 * sets, their pods and the nodes, the whole object as data, `ce-subject` its API path.
 */
const knativeEvents: Trigger = (target, controllers, rolled) => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(target.kubeconfigPath);
  const types: Record<string, string> = { ADDED: "add", MODIFIED: "update", DELETED: "delete" };
  const sources = [
    ...rolled.map(({ namespace }) => ({
      path: `/api/v1/namespaces/${namespace}/pods`,
      apiVersion: "v1",
      kind: "Pod",
    })),
    ...rolled.map(({ set, namespace }) => set.watched(namespace)),
    { path: "/api/v1/nodes", apiVersion: "v1", kind: "Node" },
  ];
  // A refused post is kept for stop (a rejection nobody awaits yet would fail the module).
  let posts = Promise.resolve();
  const failures: unknown[] = [];
  const watches = sources.map(({ path, apiVersion, kind }) =>
    new k8s.Watch(kc).watch(path, {}, (type: string, object: k8s.KubernetesObject) => {
      if (!(type in types)) return;
      const body = { apiVersion, kind, ...object };
      const subject = `${path}/${object.metadata?.name}`;
      posts = posts.then(async () => {
        const res = await post(controllers, "/events", {
          headers: {
            "content-type": "application/json",
            "ce-specversion": "1.0",
            "ce-id": crypto.randomUUID(),
            "ce-source": kc.getCurrentCluster()?.server ?? "",
            "ce-type": `dev.knative.apiserver.resource.${types[type]}`,
            "ce-subject": subject,
            "ce-time": new Date().toISOString(),
            "ce-kind": body.kind,
            "ce-name": object.metadata?.name ?? "",
            ...(object.metadata?.namespace ? { "ce-namespace": object.metadata.namespace } : {}),
          },
          body: JSON.stringify(body),
        });
        assertEquals(res.status, 202, await res.text());
      }).catch((err) => {
        failures.push(err);
      });
    }, () => {})
  );
  return {
    async stop() {
      for (const watch of watches) (await watch).abort();
      await posts;
      if (failures.length > 0) throw failures[0];
    },
  };
};

/**
 * A copy of the target's kubeconfig whose server is a forwarder counting the connections made
 * through it (TLS passes through untouched, so the certificate still names 127.0.0.1).
 */
async function countingKubeconfig(kubeconfigPath: string, dir: string) {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const server = new URL(kc.getCurrentCluster()!.server);
  const proxy = startNodeProxy({ hostname: server.hostname, port: Number(server.port) });
  const via = new URL(proxy.url);
  const text = await Deno.readTextFile(kubeconfigPath);
  const path = `${dir}/counted.kubeconfig`;
  await Deno.writeTextFile(
    path,
    text.replaceAll(server.origin, `${server.protocol}//${server.hostname}:${via.port}`),
  );
  return { path, proxy };
}

/**
 * The requests the controllers made of the API server so far (`edgeroll_kube_requests_total`),
 * by their labels (verb, resource, status), summed over the replicas.
 */
async function kubeRequests(
  controllers: ControllerProcesses,
  metric = "edgeroll_kube_requests_total",
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const line = new RegExp(`^${metric}(?:\\{([^}]*)\\})? (\\d+)$`, "gm");
  for (const url of controllers.urls) {
    const text = await (await controllers.fetch(`${url}/metrics`)).text();
    for (const m of text.matchAll(line)) {
      counts[m[1] ?? ""] = (counts[m[1] ?? ""] ?? 0) + Number(m[2]);
    }
  }
  return counts;
}

const sum = (counts: Record<string, number>) =>
  Object.values(counts).reduce((total, n) => total + n, 0);

/** The writes (create, update, patch, delete) among `kubeRequests`. */
async function writes(controllers: ControllerProcesses): Promise<Record<string, number>> {
  return Object.fromEntries(
    Object.entries(await kubeRequests(controllers)).filter(([labels]) =>
      /^verb="(?:create|update|patch|delete)"/.test(labels)
    ),
  );
}

/** What grew from `before` to `after`. */
function grown(before: Record<string, number>, after: Record<string, number>) {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, d]) => d !== 0),
  );
}

/**
 * How long the writes must stay still to call the rollout's tail written: three of its ticks, and
 * longer than the controllers hold a set's last Events before folding them into one (ADR 0038).
 */
const SETTLED_MS = Math.max(3000, defaultEventWindowMs + 1000);

/**
 * Full ticks a converged fleet must take without a write, one a second to each replica. A
 * minute of them proved no more: at rest no set holds a `nextCheckAt` (checked first), so the
 * engine keeps no wake-up and no poll and no controller a timer that could fire later in the
 * window; what is left is what any call does, and a full tick is all of it. A controller that
 * wrote at rest writes on the first; two replicas that undo each other's writes do by the
 * second; a write that wakes the relay or a cache into another is back within milliseconds.
 * The other two are margin (eight were, until the analysis scenarios needed the 32 s per target).
 */
const QUIET_TICKS = 4;

/** Every set's written status asks for no later look: the rollout holds no timer. */
async function noLookAsked(kube: Kube, rolled: Rolled[]): Promise<void> {
  for (const { set, namespace } of rolled) {
    const status = await statusOf(kube, set, namespace);
    assertEquals(status?.nextCheckAt, undefined, `${namespace}: a set at rest asks to look again`);
  }
}

/** QUIET_TICKS rounds of `POST /tick?full=true` to each replica, a second apart, each awaited. */
async function fullTicks(controllers: ControllerProcesses): Promise<void> {
  for (let round = 0; round < QUIET_TICKS; round++) {
    for (const url of controllers.urls) {
      const res = await post(controllers, "/tick?full=true", {}, url);
      assertEquals(res.status, 200, await res.text());
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function rolledTo(target: E2eTarget, kube: Kube, rolled: Rolled[], version: string) {
  await eventually(`every set on ${version} on every node`, async () => {
    for (const { set, namespace } of rolled) {
      const pods = (await kube.pods(namespace, `app=${app}`)).filter((p) =>
        !p.metadata.deletionTimestamp
      );
      const onVersion = pods.filter((p) =>
        p.spec.containers[0].image === image(version) && isReady(p)
      );
      if (onVersion.length !== target.nodes.length || pods.length !== target.nodes.length) {
        return undefined;
      }
      const complete = (await statusOf(kube, set, namespace))?.conditions?.find((c) =>
        c.type === "Complete"
      )?.status;
      if (complete !== "True") return undefined;
    }
    return true;
  }, 180_000);
}

function triggerScenario(
  name: string,
  options: {
    replicas?: number;
    tick: boolean;
    relay?: boolean;
    /** Keep `serve`'s watch-backed caches (as deployed), which call reconciles of their own. */
    caches?: boolean;
    /** In Kruise compatibility mode (ADR 0027), rolling a Kruise DaemonSet too. */
    kruise?: boolean;
    trigger: Trigger;
  },
): Scenario {
  const sets = [advancedDaemonSet, openYurtDaemonSet, ...(options.kruise ? [kruiseDaemonSet] : [])];
  return {
    name: `each trigger alone: ${name} rolls ${
      options.kruise
        ? "an AdvancedDaemonSet, an OpenYurt DaemonSet and a Kruise DaemonSet (edgeroll --kruise)"
        : "an AdvancedDaemonSet and an OpenYurt DaemonSet"
    } within budget, then writes nothing`,
    async run(target, kube) {
      const slug = `${name}${options.kruise ? " kruise" : ""}`.toLowerCase()
        .replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
      const rolled = sets.map((set) => ({ set, namespace: `e2e-trigger-${slug}-${set.name}` }));
      await kube.installCrd();
      for (const { namespace } of rolled) await kube.createNamespace(namespace);
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(target.kubeconfigPath);
      const dir = await Deno.makeTempDir({ prefix: "edgeroll-trigger-" });
      let counted: { path: string; proxy: NodeProxy } | undefined;
      try {
        counted = await countingKubeconfig(target.kubeconfigPath, dir);
        const controllerOptions = {
          replicas: options.replicas,
          // Without the caches, whose own watches would call reconciles too: the trigger alone.
          serveArgs: [
            ...(options.tick ? ["--tick=1s"] : []),
            ...(options.caches ? [] : ["--no-cache"]),
          ],
          relay: options.relay ?? false,
          // Only `serve`'s connections are counted: the relay's are its watches.
          relayKubeconfigPath: target.kubeconfigPath,
        };
        const withMode = (body: (controllers: ControllerProcesses) => Promise<void>) =>
          options.kruise
            ? withKruiseMode(target.kubeconfigPath, {
              ...controllerOptions,
              controllersKubeconfigPath: counted!.path,
            }, body)
            : withControllers(counted!.path, controllerOptions, body);
        await withMode(async (controllers) => {
          for (const { set, namespace } of rolled) {
            // Kruise's CRD may still be settling in discovery: retried until kubectl knows it.
            await eventually(
              `${set.name} applied`,
              () => kube.apply(set.manifest(namespace, "v1")),
            );
          }
          const trigger = options.trigger(target, controllers, rolled);
          try {
            await rolledTo(target, kube, rolled, "v1");

            const budgets = await Promise.all(
              rolled.map(({ namespace }) => watchBudget(kube, kc, namespace, target.nodes)),
            );
            try {
              for (const { set, namespace } of rolled) {
                await kube.patch(namespace, set.resource, app, "merge", {
                  spec: { template: template("v2") },
                });
              }
              await rolledTo(target, kube, rolled, "v2");
            } finally {
              for (const budget of budgets) await budget.stop();
            }
            for (const [i, budget] of budgets.entries()) {
              assertEquals(
                budget.seen.unavailable <= maxUnavailable,
                true,
                `${rolled[i].namespace}: ${JSON.stringify(budget.seen)}`,
              );
              assertEquals(budget.seen.podsOnOneNode, 1, rolled[i].namespace);
            }
          } finally {
            await trigger.stop();
          }

          // At rest: the rollout's last observations written (two replicas may each write the
          // tail once), the counts still for a few ticks, and no set asking to be looked at again.
          // A controller that never settles fails here.
          let before = await writes(controllers);
          await eventually("the controllers' writes to settle", async () => {
            await new Promise((resolve) => setTimeout(resolve, SETTLED_MS));
            const now = await writes(controllers);
            const settled = Object.keys(grown(before, now)).length === 0;
            before = now;
            return settled ? true : undefined;
          }, 60_000);
          await noLookAsked(kube, rolled);
          // Full resyncs posted to every replica (the most a tick does), beside the case's own
          // ticker, relay or caches, counted to the last: see QUIET_TICKS for why so few do.
          await fullTicks(controllers);
          assertEquals(grown(before, await writes(controllers)), {}, "writes at rest");

          // Connections are reused: each carries many requests (client-node alone opened one per
          // request to a TLS server). Idle ones may close (undici's keep-alive timeout) and
          // reopen, so the bound is a ratio.
          // A watch holds a connection of its own while open: the caches' are counted apart.
          const made = sum(await kubeRequests(controllers));
          const watches = sum(await kubeRequests(controllers, "edgeroll_kube_watches_total"));
          const opened = counted!.proxy.accepted - watches;
          console.log(
            JSON.stringify({ trigger: name, connections: opened, watches, requests: made }),
          );
          assertEquals(
            made >= 100 && opened * REQUESTS_PER_CONNECTION <= made,
            true,
            `${opened} connections opened by serve for ${made} requests`,
          );
          // The sets go while the controllers (the Kruise CRD's webhook among them) still run.
          for (const { namespace } of rolled) {
            await kube.run(["delete", "namespace", namespace, "--wait=false"]);
          }
        });
      } finally {
        await counted?.proxy.close();
        await Deno.remove(dir, { recursive: true });
      }
    },
  };
}

export const triggerScenarios: Scenario[] = [
  triggerScenario("the tick", { tick: true, trigger: nothing }),
  triggerScenario("the relay", { tick: false, relay: true, trigger: nothing }),
  // Where the mode changes what is listed and watched (discovery, the relay's watches), the
  // trigger is proven alone in both modes; CloudEvents and curl name their set, in Kruise mode.
  triggerScenario("the tick", { tick: true, kruise: true, trigger: nothing }),
  triggerScenario("the relay", { tick: false, relay: true, kruise: true, trigger: nothing }),
  triggerScenario("Knative ApiServerSource CloudEvents", {
    tick: false,
    kruise: true,
    trigger: knativeEvents,
  }),
  triggerScenario("curl POST /reconcile", { tick: false, kruise: true, trigger: curlReconcile }),
  triggerScenario("two replicas ticking", {
    replicas: 2,
    tick: true,
    caches: true,
    trigger: nothing,
  }),
];
