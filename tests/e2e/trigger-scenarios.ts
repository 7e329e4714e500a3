/**
 * Each way a reconcile can be called, proven alone on the target: the in-process tick with no
 * relay, the relay with no tick, CloudEvents posted as Knative's ApiServerSource posts them, and
 * curl `POST /reconcile/...`; then two replicas ticking together. Each case rolls an
 * AdvancedDaemonSet and an OpenYurt AdvancedRollingUpdate DaemonSet from v1 to v2, checks from a
 * watch that no more nodes than maxUnavailable were ever without an available pod and that no
 * node had two pods, and then counts the controllers' writes over a minute of ticks: none.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals } from "@std/assert";
import { conditionStatus, eventually, type Kube, type Pod } from "./kube.ts";
import type { E2eTarget } from "./target.ts";
import type { Scenario } from "./scenarios.ts";
import { type ControllerProcesses, withControllers } from "../processes.ts";
import { type NodeProxy, startNodeProxy } from "../../cluster/node-proxy.ts";

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

function advancedDaemonSet(namespace: string) {
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: app, namespace },
    spec: {
      selector: { matchLabels: { app } },
      template: template("v1"),
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable } },
    },
  };
}

function openYurtDaemonSet(namespace: string) {
  return {
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
      template: template("v1"),
      updateStrategy: { type: "OnDelete" },
    },
  };
}

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

/** How one case calls the controllers: its own loop, started after they are up. */
type Trigger = (
  target: E2eTarget,
  controllers: ControllerProcesses,
  namespaces: string[],
) => { stop(): Promise<void> };

const nothing: Trigger = () => ({ stop: () => Promise.resolve() });

/** Repeats `work` every `ms` until stopped; the last run is awaited. */
function every(ms: number, work: () => Promise<void>): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await work();
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

async function post(url: string, token: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return await fetch(url, { method: "POST", ...init, headers });
}

/** A person with curl: reconcile each set, again and again, as each answer's requeue says. */
const curlReconcile: Trigger = (_target, { urls, token }, [adsNs, yurtNs]) =>
  every(500, async () => {
    for (const path of [`advanceddaemonsets/${adsNs}/${app}`, `daemonsets/${yurtNs}/${app}`]) {
      const res = await post(`${urls[0]}/reconcile/${path}`, token);
      const body = await res.json();
      assertEquals(res.status, 200, JSON.stringify(body));
    }
  });

/**
 * Knative's ApiServerSource in Resource mode: one binary-mode CloudEvent per watch event of the
 * sets, their pods and the nodes, the whole object as data, `ce-subject` its API path.
 */
const knativeEvents: Trigger = (target, { urls, token }, namespaces) => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(target.kubeconfigPath);
  const types: Record<string, string> = { ADDED: "add", MODIFIED: "update", DELETED: "delete" };
  const sources = [
    ...namespaces.map((ns) => `/api/v1/namespaces/${ns}/pods`),
    ...namespaces.map((ns) => `/apis/apps/v1/namespaces/${ns}/daemonsets`),
    ...namespaces.map((ns) =>
      `/apis/apps.edgeroll.dev/v1alpha1/namespaces/${ns}/advanceddaemonsets`
    ),
    "/api/v1/nodes",
  ];
  let posts = Promise.resolve();
  const watches = sources.map((path) =>
    new k8s.Watch(kc).watch(path, {}, (type: string, object: k8s.KubernetesObject) => {
      if (!(type in types)) return;
      const kind = path.split("/").at(-1)!;
      const apiVersion = path.startsWith("/api/v1") ? "v1" : path.split("/").slice(2, 4).join("/");
      const body = {
        apiVersion,
        kind: { pods: "Pod", nodes: "Node", daemonsets: "DaemonSet" }[kind] ??
          "AdvancedDaemonSet",
        ...object,
      };
      const subject = `${path}/${object.metadata?.name}`;
      posts = posts.then(async () => {
        const res = await post(`${urls[0]}/events`, token, {
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
      });
    }, () => {})
  );
  return {
    async stop() {
      for (const watch of watches) (await watch).abort();
      await posts;
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

/** Every request the controllers made of the API server so far, summed over the replicas. */
async function requests(urls: string[]): Promise<number> {
  let total = 0;
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const m of text.matchAll(/^edgeroll_kube_requests_total\{[^}]*\} (\d+)$/gm)) {
      total += Number(m[1]);
    }
  }
  return total;
}

/**
 * Writes (create, update, patch, delete) the controllers asked of the API server so far, by
 * verb and status, summed over the replicas.
 */
async function writes(urls: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const line of text.split("\n")) {
      const m =
        /^edgeroll_kube_requests_total\{(verb="(?:create|update|patch|delete)"[^}]*)\} (\d+)/
          .exec(line);
      if (m) counts[m[1]] = (counts[m[1]] ?? 0) + Number(m[2]);
    }
  }
  return counts;
}

/** What grew from `before` to `after`. */
function grown(before: Record<string, number>, after: Record<string, number>) {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, d]) => d !== 0),
  );
}

async function rolledTo(target: E2eTarget, kube: Kube, namespaces: string[], version: string) {
  const [adsNs, yurtNs] = namespaces;
  await eventually(`both sets on ${version} on every node`, async () => {
    for (const ns of namespaces) {
      const pods = (await kube.pods(ns, `app=${app}`)).filter((p) => !p.metadata.deletionTimestamp);
      const onVersion = pods.filter((p) =>
        p.spec.containers[0].image === image(version) && isReady(p)
      );
      if (onVersion.length !== target.nodes.length || pods.length !== target.nodes.length) {
        return undefined;
      }
    }
    const ads = await kube.json<{ status?: { conditions?: { type: string; status: string }[] } }>(
      ["--namespace", adsNs, "get", "advanceddaemonsets", app],
    );
    const complete = ads.status?.conditions?.find((c) => c.type === "Complete")?.status;
    const ds = await kube.json<{ metadata: { annotations?: Record<string, string> } }>(
      ["--namespace", yurtNs, "get", "daemonset", app],
    );
    const yurtStatus = JSON.parse(
      ds.metadata.annotations?.["apps.edgeroll.dev/rollout-status"] ?? "{}",
    );
    const yurtComplete = yurtStatus.conditions?.find((c: { type: string }) => c.type === "Complete")
      ?.status;
    return complete === "True" && yurtComplete === "True" ? true : undefined;
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
    trigger: Trigger;
  },
): Scenario {
  return {
    name:
      `each trigger alone: ${name} rolls an AdvancedDaemonSet and an OpenYurt DaemonSet within budget, then writes nothing`,
    async run(target, kube) {
      const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
      const namespaces = [`e2e-trigger-${slug}-ads`, `e2e-trigger-${slug}-yurt`];
      await kube.installCrd();
      for (const ns of namespaces) await kube.createNamespace(ns);
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(target.kubeconfigPath);
      const dir = await Deno.makeTempDir({ prefix: "edgeroll-trigger-" });
      let counted: { path: string; proxy: NodeProxy } | undefined;
      try {
        counted = await countingKubeconfig(target.kubeconfigPath, dir);
        await withControllers(counted.path, {
          replicas: options.replicas,
          // Without the caches, whose own watches would call reconciles too: the trigger alone.
          serveArgs: [
            ...(options.tick ? ["--tick=1s"] : []),
            ...(options.caches ? [] : ["--no-cache"]),
          ],
          relay: options.relay,
          // Only `serve`'s connections are counted: the relay's are its watches.
          relayKubeconfigPath: target.kubeconfigPath,
        }, async (controllers) => {
          await kube.apply(advancedDaemonSet(namespaces[0]));
          await kube.apply(openYurtDaemonSet(namespaces[1]));
          const trigger = options.trigger(target, controllers, namespaces);
          try {
            await rolledTo(target, kube, namespaces, "v1");

            const budgets = await Promise.all(
              namespaces.map((ns) => watchBudget(kube, kc, ns, target.nodes)),
            );
            try {
              for (const ns of namespaces) {
                const resource = ns === namespaces[0] ? "advanceddaemonsets" : "daemonset";
                await kube.patch(ns, resource, app, "merge", {
                  spec: { template: template("v2") },
                });
              }
              await rolledTo(target, kube, namespaces, "v2");
            } finally {
              for (const budget of budgets) await budget.stop();
            }
            for (const [i, budget] of budgets.entries()) {
              assertEquals(
                budget.seen.unavailable <= maxUnavailable,
                true,
                `${namespaces[i]}: ${JSON.stringify(budget.seen)}`,
              );
              assertEquals(budget.seen.podsOnOneNode, 1, namespaces[i]);
            }
          } finally {
            await trigger.stop();
          }

          // A minute of ticks on a converged fleet: the in-process ticker, or /tick posted by
          // hand where there is none (full resyncs, the most a tick does).
          // Converged: the rollout's last observations written (two replicas may each write the
          // tail once), the counts still for 6 s; a controller that never settles fails here.
          let before = await writes(controllers.urls);
          await eventually("the controllers' writes to settle", async () => {
            await new Promise((resolve) => setTimeout(resolve, 6000));
            const now = await writes(controllers.urls);
            const settled = Object.keys(grown(before, now)).length === 0;
            before = now;
            return settled ? true : undefined;
          }, 60_000);
          const ticks = options.tick
            ? nothing(target, controllers, namespaces)
            : every(2000, async () => {
              const res = await post(`${controllers.urls[0]}/tick?full=true`, controllers.token);
              assertEquals(res.status, 200, await res.text());
            });
          await new Promise((resolve) => setTimeout(resolve, 60_000));
          await ticks.stop();
          assertEquals(grown(before, await writes(controllers.urls)), {}, "writes at rest");

          // Connections are reused: each carries many requests (client-node alone opened one per
          // request to a TLS server). Idle ones may close (undici's keep-alive timeout) and
          // reopen, so the bound is a ratio.
          const made = await requests(controllers.urls);
          const opened = counted!.proxy.accepted;
          console.log(JSON.stringify({ trigger: name, connections: opened, requests: made }));
          assertEquals(
            made >= 100 && opened * REQUESTS_PER_CONNECTION <= made,
            true,
            `${opened} connections opened by serve for ${made} requests`,
          );
        });
      } finally {
        await counted?.proxy.close();
        await Deno.remove(dir, { recursive: true });
      }
      for (const ns of namespaces) await kube.run(["delete", "namespace", ns, "--wait=false"]);
    },
  };
}

export const triggerScenarios: Scenario[] = [
  triggerScenario("the tick", { tick: true, trigger: nothing }),
  triggerScenario("the relay", { tick: false, relay: true, trigger: nothing }),
  triggerScenario("Knative ApiServerSource CloudEvents", { tick: false, trigger: knativeEvents }),
  triggerScenario("curl POST /reconcile", { tick: false, trigger: curlReconcile }),
  triggerScenario("two replicas ticking", {
    replicas: 2,
    tick: true,
    caches: true,
    trigger: nothing,
  }),
];
