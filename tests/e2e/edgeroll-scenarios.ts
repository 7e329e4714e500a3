/**
 * edgeroll's own end-to-end scenarios: the controller and the relay, started against the
 * target as a user runs them (kubeconfig, HTTP, CloudEvents), rolling sets on sim and on the
 * real control plane alike.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { KubectlError } from "../../cluster/kubectl.ts";
import { conditionStatus, eventually, Kube, patchArgs, type Pod } from "./kube.ts";
import type { E2eTarget } from "./target.ts";
import type { KubeObject } from "../../kube/wire-objects.ts";
import type { Scenario } from "./scenarios.ts";
import type { SetKind } from "../../api/set-ref.ts";
import { withEdgeAgent, withEdgeroll } from "../processes.ts";
import { otaDaemonSet, otaPodsMarked } from "../edge-ota.ts";
import { disconnectedText } from "../../controller/ota-checks.ts";
import { withKruiseMode } from "../kruise/mode.ts";

export const image = (version: string) => `edgeroll.test/edge-agent:${version}`;

/**
 * The resources a scenario's set `edge-agent` may be: edgeroll's own kind, OpenYurt's annotated
 * DaemonSet (its status in a RolloutStatus), or Kruise's DaemonSet under `serve --kruise`.
 */
export type SetResource = SetKind;

/** The set's image, changed as an operator changes it (a JSON patch through kubectl). */
export function setImage(
  kube: Kube,
  ns: string,
  version: string,
  resource: SetResource = "advanceddaemonsets",
): Promise<string> {
  return kube.run([
    "--namespace",
    ns,
    "patch",
    resource,
    "edge-agent",
    "--type=json",
    "-p",
    JSON.stringify([{
      op: "replace",
      path: "/spec/template/spec/containers/0/image",
      value: image(version),
    }]),
  ]);
}

export interface SetStatus {
  observedGeneration?: number;
  updatedNumberScheduled?: number;
  numberAvailable?: number;
  desiredNumberScheduled?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
  imagePreDownload?: {
    revision: string;
    nodes: number;
    pulled: number;
    pulling: number;
    failed: number;
  };
}

/** Each node's pod, pods on their way out left aside. */
export function podsByNode(pods: Pod[]): Map<string, Pod> {
  return new Map(
    pods.filter((p) => !p.metadata.deletionTimestamp).map((p) => [p.spec.nodeName ?? "", p]),
  );
}

function runsReady(pod: Pod | undefined, version: string): boolean {
  return pod?.status?.containerStatuses?.[0]?.image === image(version) &&
    conditionStatus(pod, "Ready") === "True";
}

export function advancedDaemonSet(namespace: string, version: string) {
  return {
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "edge-agent", namespace },
    spec: {
      selector: { matchLabels: { app: "edge-agent" } },
      template: {
        metadata: { labels: { app: "edge-agent" } },
        spec: {
          terminationGracePeriodSeconds: 5,
          containers: [{ name: "agent", image: image(version) }],
        },
      },
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { rollingUpdateType: "Standard", maxUnavailable: 1 },
      },
    },
  };
}

/**
 * One of the scenarios' AdvancedDaemonSets as OpenYurt writes it: an `apps/v1` DaemonSet, OnDelete,
 * the same selector, template and minReadySeconds, the rollout in `annotations`.
 */
export function asOpenYurtDaemonSet(
  set: ReturnType<typeof advancedDaemonSet> & { spec: { minReadySeconds?: number } },
  annotations: Record<string, string>,
) {
  const { metadata, spec } = set;
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { ...metadata, annotations },
    spec: {
      selector: spec.selector,
      template: spec.template,
      minReadySeconds: spec.minReadySeconds,
      updateStrategy: { type: "OnDelete" },
    },
  };
}

export async function setStatus(
  kube: Kube,
  namespace: string,
  resource: SetResource = "advanceddaemonsets",
): Promise<SetStatus> {
  return (await kube.writtenStatus(resource, resource, namespace, "edge-agent") ?? {}) as SetStatus;
}

/** Waits for the set to say Complete with every node on `version`, Ready. */
export async function completeOn(
  target: E2eTarget,
  kube: Kube,
  namespace: string,
  version: string,
  resource: SetResource = "advanceddaemonsets",
) {
  await eventually(`edge-agent ${version} on every node`, async () => {
    const status = await setStatus(kube, namespace, resource);
    const byNode = podsByNode(await kube.pods(namespace, "app=edge-agent"));
    const complete = status.conditions?.find((c) => c.type === "Complete")?.status === "True";
    return complete && status.updatedNumberScheduled === target.nodes.length &&
        target.nodes.every((n) => runsReady(byNode.get(n), version))
      ? true
      : undefined;
  });
}

/**
 * OpenYurt's walkthrough: `curl -X POST <api>/openyurt.io/v1/namespaces/NS/pods/POD/upgrade` on
 * the pod of `node`; the DaemonSet recreates it on v2, and edgeroll marks the new pod False. A
 * second call for the new pod is refused: it has nothing to upgrade to.
 */
async function upgradeThroughApi(
  kube: Kube,
  ns: string,
  node: string,
  marked: Pod[],
  api: { url: string; token?: string },
): Promise<void> {
  const old = marked.find((p) => p.spec.nodeName === node)!;
  // The controller asks for its token; the edge agent on loopback, as YurtHub, for none.
  const headers = api.token ? { authorization: `Bearer ${api.token}` } : undefined;
  const upgrade = (pod: Pod) =>
    fetch(`${api.url}/openyurt.io/v1/namespaces/${ns}/pods/${pod.metadata.name}/upgrade`, {
      method: "POST",
      headers,
    });
  const listed = await fetch(`${api.url}/pods?node=${node}`, { headers });
  // The controller lists OTA pods only; the edge agent, as YurtHub, every pod of its node.
  const items: Pod[] = (await listed.json()).items;
  assertEquals(
    items.filter((p) => p.metadata.labels?.app === "ota-agent").map((p) => p.metadata.uid),
    [old.metadata.uid],
  );
  const res = await upgrade(old);
  assertEquals(
    [res.status, await res.text()],
    [200, `Start updating pod ${ns}/${old.metadata.name}`],
  );
  const replaced = await eventually(`the pod on ${node} replaced on v2, not marked`, async () => {
    const now = podsByNode(await kube.pods(ns, "app=ota-agent")).get(node);
    return now && now.metadata.uid !== old.metadata.uid && runsReady(now, "v2") &&
        conditionStatus(now, "PodNeedUpgrade") === "False"
      ? now
      : undefined;
  });
  const again = await upgrade(replaced);
  assertEquals(again.status, 403);
  await again.body?.cancel();
}

/**
 * Placement follows the nodes (issue 12): a node that starts matching the template's
 * nodeSelector gets its pod within a few seconds, through the relay's flush, not the resync; one
 * that stops matching loses it; a NoSchedule taint keeps a pod off until it is removed.
 */
const placementScenario: Scenario = {
  name: "edgeroll places pods as node labels and taints change, within seconds",
  async run(target, kube) {
    const ns = "e2e-edgeroll-placement";
    const label = "edgeroll-e2e/agent";
    const [first, second] = target.nodes;
    await kube.installCrd();
    await kube.createNamespace(ns);
    const set = advancedDaemonSet(ns, "v1");
    (set.spec.template.spec as Record<string, unknown>).nodeSelector = { [label]: "yes" };
    const onNodes = async () =>
      [...podsByNode(await kube.pods(ns, "app=edge-agent")).entries()]
        .filter(([, p]) => conditionStatus(p, "Ready") === "True").map(([n]) => n).sort();
    // Seconds, where the resync (--tick 30s here) would take half a minute or more.
    const soon = <T>(what: string, check: () => Promise<T | undefined>) =>
      eventually(what, check, 20_000);
    try {
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=30s"] }, async () => {
        await kube.apply(set);
        await kube.run(["label", "node", first, `${label}=yes`]);
        await soon(
          `a pod on ${first}`,
          async () => (await onNodes()).join() === first ? true : undefined,
        );
        await kube.run(["taint", "node", second, "edgeroll-e2e/hold=1:NoSchedule"]);
        await kube.run(["label", "node", second, `${label}=yes`]);
        await new Promise((resolve) => setTimeout(resolve, 3000));
        assertEquals(await onNodes(), [first], "a NoSchedule taint keeps the pod off");
        await kube.run(["taint", "node", second, "edgeroll-e2e/hold=1:NoSchedule-"]);
        await soon(
          `a pod on ${second} once its taint is gone`,
          async () => (await onNodes()).join() === [first, second].sort().join() ? true : undefined,
        );
        await kube.run(["label", "node", first, `${label}-`]);
        await soon(
          `no pod on ${first} once it stops matching`,
          async () => (await onNodes()).join() === second ? true : undefined,
        );
      });
    } finally {
      for (const node of [first, second]) {
        await kube.run(["label", "node", node, `${label}-`]);
      }
      // Already removed when the scenario got that far: kubectl then says "not found".
      await kube.run(["taint", "node", second, "edgeroll-e2e/hold-"]).catch(() => "");
      await kube.run(["delete", "namespace", ns, "--wait=false"]);
    }
  },
};

interface Condition {
  type: string;
  status: string;
  message?: string;
}

/** The set's InvalidSpec condition once it is True. */
function invalidSpec(kube: Kube, namespace: string, name: string): Promise<Condition> {
  return eventually(`${name} InvalidSpec`, async () => {
    const set = await kube.json<{ status?: { conditions?: Condition[] } }>(
      ["--namespace", namespace, "get", "advanceddaemonsets", name],
    );
    const condition = set.status?.conditions?.find((c) => c.type === "InvalidSpec");
    return condition?.status === "True" ? condition : undefined;
  });
}

/**
 * A template the API server refuses costs no pod (issue 21): before deleting anything for a
 * new revision, edgeroll asks the API server to create its pod (and ControllerRevision) as a
 * dry run; a refusal becomes InvalidSpec with the server's words, and nothing is deleted. The
 * same for a set named too long for its ControllerRevisions, and for a selector whose label
 * value no list could carry.
 */
const refusedTemplateScenario: Scenario = {
  name: "a template the API server refuses becomes InvalidSpec and costs no pod",
  async run(target, kube) {
    const ns = "e2e-edgeroll-refused";
    await kube.installCrd();
    await kube.createNamespace(ns);
    const uids = async () =>
      (await kube.pods(ns, "app=edge-agent")).map((p) => p.metadata.uid).sort();
    try {
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
        await kube.apply(advancedDaemonSet(ns, "v1"));
        await completeOn(target, kube, ns, "v1");
        const before = await uids();
        // The set is stored (its template is not checked as a pod's), but no pod can be made.
        await kube.patch(ns, "advanceddaemonsets", "edge-agent", "json", [{
          op: "remove",
          path: "/spec/template/spec/containers/0/image",
        }]);
        const noImage = await invalidSpec(kube, ns, "edge-agent");
        assertStringIncludes(noImage.message ?? "", "spec.template: the API server refuses it");
        assertStringIncludes(noImage.message ?? "", "image");
        await new Promise((resolve) => setTimeout(resolve, 3000));
        assertEquals(await uids(), before, "no pod deleted or replaced for it");
        await kube.apply(advancedDaemonSet(ns, "v2"));
        await completeOn(target, kube, ns, "v2");

        const longName = "a".repeat(250);
        const long = advancedDaemonSet(ns, "v1");
        long.metadata.name = longName;
        long.spec.selector.matchLabels.app = "long-agent";
        long.spec.template.metadata.labels.app = "long-agent";
        await kube.apply(long);
        const tooLong = await invalidSpec(kube, ns, longName);
        assertStringIncludes(tooLong.message ?? "", "ControllerRevision");
        assertStringIncludes(tooLong.message ?? "", "253");
        assertEquals((await kube.pods(ns, "app=long-agent")).length, 0);

        const badSelector = advancedDaemonSet(ns, "v1");
        badSelector.metadata.name = "bad-selector";
        badSelector.spec.selector.matchLabels.app = "no such value!";
        badSelector.spec.template.metadata.labels.app = "no such value!";
        await kube.apply(badSelector);
        const selector = await invalidSpec(kube, ns, "bad-selector");
        assertStringIncludes(selector.message ?? "", "spec.selector.matchLabels.app");
      });
    } finally {
      await kube.run(["delete", "namespace", ns, "--wait=false"]);
    }
  },
};

/**
 * Requests the controller has made of the API server so far that were answered `code`: all verbs,
 * retries included.
 */
async function requestsAnswered(url: string, code: number): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^edgeroll_kube_requests_total\{([^}]*)\} (\d+)$/gm)]
    .filter((m) => m[1].includes(`code="${code}"`))
    .reduce((n, m) => n + Number(m[2]), 0);
}

/**
 * A set deleted while its pods hang on a finalizer (issue 12): every pod change still names the
 * set, which is gone. The queue backs off per set, so the controller asks the API server a
 * bounded trickle, not hundreds of GETs a second.
 */
const deletedSetScenario: Scenario = {
  name: "a deleted set whose pods hang on a finalizer costs a bounded trickle of requests",
  async run(target, kube) {
    const ns = "e2e-edgeroll-deleted";
    const finalizer = "edgeroll.test/hold";
    await kube.installCrd();
    await kube.createNamespace(ns);
    const set = advancedDaemonSet(ns, "v1");
    (set.spec.template.metadata as Record<string, unknown>).finalizers = [finalizer];
    const release = async () => {
      for (const pod of await kube.pods(ns, "app=edge-agent")) {
        await kube.patch(ns, "pod", pod.metadata.name, "merge", { metadata: { finalizers: null } })
          .catch(() => "");
      }
    };
    try {
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=30s"] }, async (edgeroll) => {
        await kube.apply(set);
        await completeOn(target, kube, ns, "v1");
        // The template's finalizers are the pods' (as upstream copies them).
        const pods = await kube.pods(ns, "app=edge-agent");
        assertEquals(pods.every((p) => p.metadata.finalizers?.includes(finalizer)), true);
        await kube.run(["--namespace", ns, "delete", "advanceddaemonsets", "edge-agent"]);
        await eventually("the pods terminating, held by their finalizer", async () => {
          const left = await kube.pods(ns, "app=edge-agent");
          return left.length === target.nodes.length &&
              left.every((p) => p.metadata.deletionTimestamp)
            ? true
            : undefined;
        });
        // What a gone set costs is asked of the API server and answered 404. Only those are
        // counted: in the suite, other scenarios' sets (in their own namespaces, watched by this
        // controller too) are busy meanwhile, and their requests are no loop of this one's.
        const before = await requestsAnswered(edgeroll.url, 404);
        // Pod changes that name the gone set, as a node's status updates would bring.
        for (const pod of await kube.pods(ns, "app=edge-agent")) {
          await kube.run(["--namespace", ns, "label", "pod", pod.metadata.name, "touched=1"]);
        }
        await new Promise((resolve) => setTimeout(resolve, 20_000));
        const made = await requestsAnswered(edgeroll.url, 404) - before;
        // A GET of the set per backoff step (0.5, 1, 2, 4, 8 s…): no loop.
        console.log(JSON.stringify({ deletedSetNotFoundIn20s: made }));
        assertEquals(made >= 1 && made <= 30, true, `${made} requests answered 404 in 20 s`);
      });
    } finally {
      await release();
      await kube.run(["delete", "namespace", ns, "--wait=false"]);
    }
  },
};

/** Runs kubectl (`stdin` piped in) expecting a refusal; answers its stderr. */
export async function refused(kube: Kube, args: string[], stdin?: string): Promise<string> {
  try {
    await kube.run(args, stdin);
  } catch (err) {
    if (err instanceof KubectlError) return err.stderr;
    throw err;
  }
  throw new Error(`kubectl ${args.join(" ")} was allowed`);
}

/**
 * The edge agent's credentials are its node's (manifests/edge-agent): whoever holds them, the
 * agent or a hand-made request, reaches that node's pods and no other's (Node authorizer,
 * NodeRestriction).
 */
const nodeCredentialsScenario: Scenario = {
  name: "an edge node's credentials reach its own pods only, even with hand-made requests",
  async run(target, kube) {
    const ns = "e2e-node-credentials";
    await kube.createNamespace(ns);
    await kube.apply(otaDaemonSet(ns, image("v1")));
    const byNode = await eventually("one pod per node", async () => {
      const pods = podsByNode(await kube.pods(ns, "app=ota-agent"));
      return target.nodes.every((n) => pods.has(n)) ? pods : undefined;
    });
    assertStringIncludes(
      await refused(
        kube,
        patchArgs(ns, "daemonset", "ota-agent", "merge", {
          spec: {
            selector: { matchLabels: { app: "ota-agent-b" } },
            template: { metadata: { labels: { app: "ota-agent-b" } } },
          },
        }),
      ),
      "field is immutable",
    );
    const [own, other] = target.nodes;
    const ownPod = byNode.get(own)!;
    const otherPod = byNode.get(other)!;
    const asNode = new Kube(await target.nodeKubeconfig(own));

    assertStringIncludes(
      await refused(asNode, ["get", "pods", "--all-namespaces"]),
      "can only list/watch pods with spec.nodeName field selector",
    );
    const listed = await asNode.json<{ items: Pod[] }>([
      "get",
      "pods",
      "--all-namespaces",
      `--field-selector=spec.nodeName=${own}`,
    ]);
    assertEquals(listed.items.every((p) => p.spec.nodeName === own), true);
    assertEquals(listed.items.some((p) => p.metadata.uid === ownPod.metadata.uid), true);
    assertStringIncludes(
      await refused(asNode, ["--namespace", ns, "get", "pod", otherPod.metadata.name]),
      "forbidden",
    );
    assertStringIncludes(
      await refused(asNode, ["--namespace", ns, "get", "daemonset", "ota-agent"]),
      "forbidden",
    );
    assertStringIncludes(
      await refused(asNode, [
        "--namespace",
        ns,
        "delete",
        "pod",
        otherPod.metadata.name,
        "--wait=false",
      ]),
      `node "${own}" can only delete pods with spec.nodeName set to itself`,
    );
    const still = podsByNode(await kube.pods(ns, "app=ota-agent")).get(other);
    assertEquals(still?.metadata.uid, otherPod.metadata.uid);

    // The agent itself, on those credentials: its node's pods, and a refusal for another's.
    await withEdgeAgent(asNode.kubeconfigPath, own, async (agent) => {
      const headers = { authorization: `Bearer ${agent.token}` };
      const listedByAgent = await fetch(`${agent.url}/pods`, { headers });
      const items: Pod[] = (await listedByAgent.json()).items;
      assertEquals(items.some((p) => p.metadata.uid === ownPod.metadata.uid), true);
      assertEquals(items.every((p) => p.spec.nodeName === own), true);
      const upgradeOther = await fetch(
        `${agent.url}/openyurt.io/v1/namespaces/${ns}/pods/${otherPod.metadata.name}/upgrade`,
        { method: "POST", headers },
      );
      assertEquals(upgradeOther.status, 403);
      await upgradeOther.body?.cancel();

      // Cut off from the cloud, the node's agent loses the API server with the node: 503.
      await target.disconnect(own);
      try {
        const cutOff = await fetch(
          `${agent.url}/openyurt.io/v1/namespaces/${ns}/pods/${ownPod.metadata.name}/upgrade`,
          { method: "POST", headers },
        );
        assertEquals([cutOff.status, await cutOff.text()], [503, disconnectedText]);
      } finally {
        await target.reconnect(own);
      }
      await kube.nodeReady(own, (status) => status === "True");
      const healed = await fetch(`${agent.url}/pods`, { headers });
      assertEquals(healed.status, 200);
      await healed.body?.cancel();
    }, { token: true });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

/** Kruise's documentation's Advanced DaemonSet, as a Kruise user has it (v1alpha1). */
function kruiseDaemonSet(namespace: string, version: string, rollingUpdateType: string) {
  return {
    apiVersion: "apps.kruise.io/v1alpha1",
    kind: "DaemonSet",
    metadata: { name: "sample-ds", namespace },
    spec: {
      selector: { matchLabels: { app: "guestbook-daemon" } },
      template: {
        metadata: { labels: { app: "guestbook-daemon" } },
        spec: { containers: [{ name: "guestbook", image: image(version) }] },
      },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { rollingUpdateType } },
    },
  };
}

/**
 * Kruise compatibility (ADR 0027) as a Kruise user takes it: edgeroll serve and relay with
 * --kruise, serving HTTPS for the CRD's conversion webhook; `kubectl apply` of Kruise's own
 * v1alpha1 manifest; the rollout read under both versions and in `kubectl get`'s columns; an
 * in-place image update through v1alpha1, pods kept and carrying Kruise's readiness gate.
 */
const kruiseDropInScenario: Scenario = {
  name: "Kruise's v1alpha1 DaemonSet manifest rolls out under edgeroll --kruise, in place",
  async run(target, kube) {
    const ns = "e2e-kruise-drop-in";
    await kube.createNamespace(ns);
    await withKruiseMode(target.kubeconfigPath, { serveArgs: ["--tick=2s"] }, async () => {
      const status = (version: "v1alpha1" | "v1beta1") =>
        kube.json<{ status?: Record<string, unknown> }>([
          "--namespace",
          ns,
          "get",
          `daemonsets.${version}.apps.kruise.io`,
          "sample-ds",
        ]).then((s) => s.status ?? {});
      const rolledTo = (version: string) =>
        eventually(`sample-ds on ${version} on every node`, async () => {
          const alpha = await status("v1alpha1");
          const pods = podsByNode(await kube.pods(ns, "app=guestbook-daemon"));
          return alpha.updatedNumberScheduled === target.nodes.length &&
              alpha.numberAvailable === target.nodes.length &&
              target.nodes.every((n) =>
                pods.get(n)?.status?.containerStatuses?.[0]?.image === image(version) &&
                conditionStatus(pods.get(n)!, "Ready") === "True"
              )
            ? alpha
            : undefined;
        });

      await eventually(
        "the v1alpha1 manifest applied",
        () => kube.apply(kruiseDaemonSet(ns, "v1", "InPlaceIfPossible")),
      );
      const first = await rolledTo("v1");
      // The revision under each version's own name: the conversion webhook at work.
      const beta = await status("v1beta1");
      assertEquals(typeof first.daemonSetHash, "string");
      assertEquals(beta.updateRevision, first.daemonSetHash);
      assertEquals("daemonSetHash" in beta, false);
      const before = await kube.pods(ns, "app=guestbook-daemon");
      for (const pod of before) {
        const owner = pod.metadata.ownerReferences?.find((o) => o.controller);
        assertEquals([owner?.apiVersion, owner?.kind], ["apps.kruise.io/v1beta1", "DaemonSet"]);
        assertEquals(
          pod.spec.readinessGates?.map((g) => g.conditionType),
          ["InPlaceUpdateReady"],
        );
        assertEquals(conditionStatus(pod, "InPlaceUpdateReady"), "True");
      }
      const table = await kube.run(["--namespace", ns, "get", "daemonsets.apps.kruise.io"]);
      assertStringIncludes(table, "DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   AGE");

      await kube.apply(kruiseDaemonSet(ns, "v2", "InPlaceIfPossible"));
      await rolledTo("v2");
      const after = await kube.pods(ns, "app=guestbook-daemon");
      assertEquals(
        after.map((p) => p.metadata.uid).sort(),
        before.map((p) => p.metadata.uid).sort(),
        "updated in place: the same pods",
      );
      await kube.run(["--namespace", ns, "delete", "daemonsets.apps.kruise.io", "sample-ds"]);
    });
  },
};

export const edgerollScenarios: Scenario[] = [
  refusedTemplateScenario,
  deletedSetScenario,
  {
    name: "edgeroll rolls an AdvancedDaemonSet, passing over a cut node until it returns",
    async run(target, kube) {
      const ns = "e2e-edgeroll-ads";
      await kube.installCrd();
      await kube.createNamespace(ns);
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
        await kube.apply(advancedDaemonSet(ns, "v1"));
        await completeOn(target, kube, ns, "v1");
        // Kruise's columns, and upstream DaemonSet's wide ones, as the API server renders them.
        const [header, row] = (await kube.run(["--namespace", ns, "get", "ads", "-o", "wide"]))
          .trim().split("\n").map((line) => line.trim().split(/\s{2,}/));
        assertEquals(header, [
          "NAME",
          "DESIRED",
          "CURRENT",
          "READY",
          "UP-TO-DATE",
          "AVAILABLE",
          "AGE",
          "CONTAINERS",
          "IMAGES",
          "SELECTOR",
        ]);
        const n = String(target.nodes.length);
        assertEquals([...row.slice(0, 6), ...row.slice(7, 9)], [
          "edge-agent",
          n,
          n,
          n,
          n,
          n,
          "agent",
          image("v1"),
        ]);
        assertStringIncludes(row[9], "edge-agent");
        const narrow = (await kube.run(["--namespace", ns, "get", "ads"])).split("\n")[0];
        assertEquals(narrow.includes("IMAGES"), false);
        // What was done to its pods is told on the set, as upstream tells it on a DaemonSet:
        // `kubectl describe ads` names a pod created on every node (creations folded into few
        // SuccessfulCreate Events, the last within the controller's Event window: ADR 0038).
        await eventually("a pod created on every node, told on the set", async () => {
          const events = await kube.json<{
            items: {
              reason: string;
              message: string;
              involvedObject: { kind: string; name: string };
            }[];
          }>(["--namespace", ns, "get", "events"]);
          const onSet = events.items.filter((e) =>
            e.involvedObject.kind === "AdvancedDaemonSet" && e.involvedObject.name === "edge-agent"
          );
          const createdOn = onSet.filter((e) => e.reason === "SuccessfulCreate")
            .flatMap((e) =>
              [...e.message.matchAll(/Created pod \S+ on node (\S+):/g)].map((m) => m[1])
            );
          return JSON.stringify(createdOn.sort()) === JSON.stringify([...target.nodes].sort())
            ? true
            : undefined;
        });
        // The selector is immutable, as a DaemonSet's: a changed one would hide every old pod
        // from the set and start a second pod on every node (issue 21). kubectl names the set
        // from the Status's details, as the API server gives them (issue 12).
        const immutable = await refused(
          kube,
          patchArgs(ns, "ads", "edge-agent", "merge", {
            spec: {
              selector: { matchLabels: { app: "agent-b" } },
              template: { metadata: { labels: { app: "agent-b" } } },
            },
          }),
        );
        assertStringIncludes(immutable, "field is immutable");
        assertStringIncludes(immutable, 'The AdvancedDaemonSet "edge-agent" is invalid');

        const cut = target.nodes[target.nodes.length - 1];
        await target.disconnect(cut);
        try {
          await kube.nodeReady(cut, (status) => status !== "True");
          const before = podsByNode(await kube.pods(ns, "app=edge-agent")).get(cut)!;
          await kube.patch(ns, "advanceddaemonsets", "edge-agent", "merge", {
            spec: { template: advancedDaemonSet(ns, "v2").spec.template },
          });
          await eventually("every connected node on v2", async () => {
            const byNode = podsByNode(await kube.pods(ns, "app=edge-agent"));
            return target.nodes.filter((n) => n !== cut).every((n) =>
                runsReady(byNode.get(n), "v2")
              )
              ? true
              : undefined;
          });
          // The set says what it waits for: the cut node stays desired, and Complete is False
          // because of it (upstream would count it misscheduled and call the set complete).
          const waiting = await eventually("Complete False, NodesUnreachable", async () => {
            const status = await setStatus(kube, ns);
            const complete = status.conditions?.find((c) => c.type === "Complete");
            return complete?.reason === "NodesUnreachable" ? status : undefined;
          });
          assertEquals(waiting.desiredNumberScheduled, target.nodes.length);
          assertStringIncludes(
            waiting.conditions?.find((c) => c.type === "Complete")?.message ?? "",
            `1 NotReady node run an old revision, updated when they come back: ${cut}`,
          );
          // The cut node's pod was neither deleted nor replaced: it waits for the node.
          const pods = await kube.pods(ns, "app=edge-agent");
          const onCut = pods.filter((p) => p.spec.nodeName === cut);
          assertEquals(onCut.map((p) => [p.metadata.uid, p.metadata.deletionTimestamp]), [
            [before.metadata.uid, undefined],
          ]);
        } finally {
          await target.reconnect(cut);
          await kube.nodeReady(cut, (status) => status === "True");
        }
        await completeOn(target, kube, ns, "v2");
      });
    },
  },
  {
    name:
      "edgeroll marks OpenYurt OTA pods PodNeedUpgrade; the controller and the edge agent upgrade on request",
    async run(target, kube) {
      const ns = "e2e-edgeroll-ota";
      await kube.installCrd();
      await kube.createNamespace(ns);
      await kube.apply(otaDaemonSet(ns, image("v1")));
      const first = await eventually("one Ready OTA pod per node", async () => {
        const byNode = podsByNode(await kube.pods(ns, "app=ota-agent"));
        return target.nodes.every((n) => runsReady(byNode.get(n), "v1")) ? byNode : undefined;
      });
      await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async (edgeroll) => {
        const marked = await otaPodsMarked(kube, ns, target.nodes.length, image("v2"), eventually);
        // The same pods, still on v1: the node decides when to upgrade.
        assertEquals(
          marked.map((p) => p.metadata.uid).sort(),
          [...first.values()].map((p) => p.metadata.uid).sort(),
        );
        for (const pod of marked) {
          const condition = pod.status?.conditions?.find((c) => c.type === "PodNeedUpgrade");
          assertEquals(condition?.message?.startsWith("controllerrevision: "), true);
        }
        // A fleet operator upgrades the first node through the controller, the second node's
        // owner through the edge agent on that node.
        const [firstNode, secondNode] = target.nodes;
        await upgradeThroughApi(kube, ns, firstNode, marked, edgeroll);
        // The edge agent acts with its node's own credentials, as in manifests/edge-agent.
        await withEdgeAgent(
          await target.nodeKubeconfig(secondNode),
          secondNode,
          (agent) => upgradeThroughApi(kube, ns, secondNode, marked, agent),
        );
        // The other nodes keep their marked v1 pods: only a node's owner upgrades it.
        const untouched = (pods: Pod[]) =>
          pods.filter((p) => p.spec.nodeName !== firstNode && p.spec.nodeName !== secondNode);
        assertEquals(
          untouched(await kube.pods(ns, "app=ota-agent"))
            .map((p) => `${p.metadata.uid} ${conditionStatus(p, "PodNeedUpgrade")}`).sort(),
          untouched(marked).map((p) => `${p.metadata.uid} True`).sort(),
        );
      });
      // Its rollout status is a RolloutStatus the DaemonSet owns (ADR 0039): the DaemonSet holds
      // none of it, and the garbage collector takes it with the DaemonSet.
      const get = (resource: string) =>
        kube.json<KubeObject>(["--namespace", ns, "get", resource, "ota-agent"]);
      const [daemonSet, rolloutStatus] = [await get("daemonsets"), await get("rolloutstatuses")];
      assertEquals(rolloutStatus.metadata.ownerReferences?.map((o) => o.uid), [
        daemonSet.metadata.uid,
      ]);
      assertEquals(
        (rolloutStatus.status as { observedGeneration?: number }).observedGeneration,
        daemonSet.metadata.generation,
      );
      assertEquals(
        Object.keys(daemonSet.metadata.annotations ?? {}).filter((k) =>
          k.startsWith("apps.edgeroll.dev/")
        ),
        [],
      );
      await kube.run(["--namespace", ns, "delete", "daemonsets", "ota-agent"]);
      await eventually("the RolloutStatus collected with its DaemonSet", async () => {
        const left = await kube.json<{ items: unknown[] }>(
          ["--namespace", ns, "get", "rolloutstatuses"],
        );
        return left.items.length === 0 || undefined;
      });
    },
  },
  nodeCredentialsScenario,
  placementScenario,
  kruiseDropInScenario,
];
