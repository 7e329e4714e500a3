/**
 * OpenYurt's OTA upgrade as its users meet it: seed 004's walkthrough, its shell commands run as
 * written (`kubectl` and `curl` through bash), against the edge agent's built executable on
 * 127.0.0.1:10267 with the node's own credentials; and the case OTA exists for, beyond
 * OpenYurt: the API server gone, the agent answering from its cache and keeping an upgrade
 * asked for then until the API server is back.
 */
import { assertEquals, assertMatch, assertStringIncludes } from "@std/assert";
import { disconnectedText } from "../../controller/ota-checks.ts";
import {
  type Job,
  podImageReady,
  pullImageFail,
  pullImageSuccess,
  pullJobName,
  pullSetLabel,
} from "../../api/image-pull.ts";
import { withEdgeAgent, withEdgeroll } from "../processes.ts";
import { otaDaemonSet, otaPodsMarked, setOtaImage } from "../edge-ota.ts";
import { conditionStatus, eventually, type Kube, type Pod } from "./kube.ts";
import type { Scenario } from "./scenarios.ts";
import type { E2eTarget } from "./target.ts";

/** One of the walkthrough's shell commands, run by bash against the target's cluster. */
async function shell(target: E2eTarget, script: string): Promise<string> {
  const out = await new Deno.Command("bash", {
    args: ["-euo", "pipefail", "-c", script],
    env: { KUBECONFIG: target.kubeconfigPath },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`${script}\nexit ${out.code}: ${new TextDecoder().decode(out.stderr)}${text}`);
  }
  return text;
}

/** The walkthrough's DaemonSet, as its `cat <<EOF | kubectl apply -f -` writes it. */
const walkthroughApply = (image: string) =>
  `cat <<EOF | kubectl apply -f -
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: nginx-daemonset
  annotations:
    apps.openyurt.io/update-strategy: ota
spec:
  selector:
    matchLabels:
      app: nginx
  updateStrategy:
    type: OnDelete
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: ${image}

EOF`;

/** `kubectl get pods -o wide | grep nginx-daemonset`, read as NAME … NODE columns. */
async function walkthroughPods(target: E2eTarget): Promise<{ name: string; node: string }[]> {
  const lines = await shell(target, "kubectl get pods -o wide | grep nginx-daemonset || true");
  return lines.split("\n").filter((l) => l.trim() !== "").map((line) => {
    const columns = line.trim().split(/\s+/);
    return { name: columns[0], node: columns[6] };
  });
}

/** The `Conditions:` block of `kubectl describe pods NAME`: `PodNeedUpgrade    True`. */
async function describedNeed(target: E2eTarget, pod: string): Promise<string | undefined> {
  const described = await shell(target, `kubectl describe pods ${pod}`);
  return /^\s+PodNeedUpgrade\s+(\S+)\s*$/m.exec(described)?.[1];
}

const walkthroughScenario: Scenario = {
  name:
    "seed 004's OTA walkthrough, its commands as written, against the edge agent's executable on 127.0.0.1:10267",
  async run(target) {
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      await shell(target, walkthroughApply("nginx:1.19.4"));
      const pods = await eventually("one nginx-daemonset pod per node", async () => {
        const listed = await walkthroughPods(target);
        return target.nodes.every((n) => listed.some((p) => p.node === n)) ? listed : undefined;
      });
      const node = target.nodes[1];
      const pod = pods.find((p) => p.node === node)!.name;
      await eventually(
        `PodNeedUpgrade False on ${pod}`,
        async () => await describedNeed(target, pod) === "False",
      );

      await shell(target, walkthroughApply("nginx:1.19.5"));
      await eventually(
        `PodNeedUpgrade True on ${pod}`,
        async () => await describedNeed(target, pod) === "True",
      );

      // The node's owner, on the node: the agent with the node's credentials, as YurtHub.
      await withEdgeAgent(await target.nodeKubeconfig(node), node, async () => {
        const answer = await shell(
          target,
          `curl -sS -X POST 127.0.0.1:10267/openyurt.io/v1/namespaces/default/pods/${pod}/upgrade`,
        );
        assertEquals(answer, `Start updating pod default/${pod}`);
      }, { port: 10267 });

      const replaced = await eventually(`a new nginx-daemonset pod on ${node}`, async () => {
        const now = (await walkthroughPods(target)).find((p) => p.node === node);
        return now && now.name !== pod ? now.name : undefined;
      });
      const described = await shell(target, `kubectl describe pods ${replaced}`);
      assertMatch(described, /^\s+Image:\s+nginx:1\.19\.5$/m);
      // The other nodes' pods wait for their owners.
      const others = (await walkthroughPods(target)).filter((p) => p.node !== node);
      assertEquals(
        others.map((p) => p.name).sort(),
        pods.filter((p) => p.node !== node).map((p) => p.name).sort(),
      );
      await shell(target, "kubectl delete daemonset nginx-daemonset --wait=false");
    });
  },
};

/** `GET /pods` on the agent: its pods' UIDs, the data's age, and the queued upgrades. */
async function agentPods(url: string) {
  const res = await fetch(`${url}/pods`);
  assertEquals(res.status, 200);
  const body = await res.json();
  return {
    age: Number(res.headers.get("age")),
    pods: body.items as Pod[],
    requests: body.upgradeRequests as { uid: string; state: string }[],
  };
}

const apiServerStoppedScenario: Scenario = {
  name:
    "with the API server stopped, the edge agent answers GET /pods from its cache, after a restart too, and carries out a whenConnected upgrade once it is back",
  async run(target: E2eTarget, kube: Kube) {
    const ns = "e2e-ota-offline";
    const image = (v: string) => `edgeroll.test/ota-agent:${v}`;
    await kube.installCrd();
    await kube.createNamespace(ns);
    await kube.apply(otaDaemonSet(ns, image("v1")));
    const node = target.nodes[0];
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      const marked = await otaPodsMarked(kube, ns, target.nodes.length, image("v2"), eventually);
      const ours = marked.find((p) => p.spec.nodeName === node)!;

      await withEdgeAgent(await target.nodeKubeconfig(node), node, async (agent) => {
        await eventually("the mark in the agent's cache", async () => {
          const { pods } = await agentPods(agent.url);
          const cached = pods.find((p) => p.metadata.uid === ours.metadata.uid);
          return cached && conditionStatus(cached, "PodNeedUpgrade") === "True";
        });
        const upgradeUrl =
          `${agent.url}/openyurt.io/v1/namespaces/${ns}/pods/${ours.metadata.name}/upgrade`;
        await target.stopApiServer();
        try {
          await eventually(
            "the agent to see the API server gone",
            async () => (await (await fetch(`${agent.url}/healthz`)).json()).connected === false,
          );
          await new Promise((resolve) => setTimeout(resolve, 1_100));
          const cached = await agentPods(agent.url);
          assertEquals(cached.pods.some((p) => p.metadata.uid === ours.metadata.uid), true);
          assertEquals(cached.age >= 1, true, `Age ${cached.age}`);
          const now = await fetch(upgradeUrl, { method: "POST" });
          assertEquals([now.status, await now.text()], [503, disconnectedText]);
          const queued = await fetch(`${upgradeUrl}?whenConnected=true`, { method: "POST" });
          assertEquals(queued.status, 202);
          assertStringIncludes(await queued.text(), "when the node is connected to cloud again");
          // The agent restarted while the API server is away: its cache and queue are on disk.
          await agent.restart();
          const restarted = await agentPods(agent.url);
          assertEquals(restarted.pods.some((p) => p.metadata.uid === ours.metadata.uid), true);
          assertEquals(restarted.requests.map((r) => [r.uid, r.state]), [
            [ours.metadata.uid, "pending"],
          ]);
        } finally {
          await target.startApiServer();
        }
        const replacement = await replacedOn(kube, ns, node, ours);
        assertEquals(replacement.spec.containers[0].image, image("v2"));
        const settled = await eventually("the queued upgrade settled", async () => {
          const { requests } = await agentPods(agent.url);
          return requests[0]?.state !== "pending" ? requests : undefined;
        });
        assertEquals(settled.map((r) => [r.uid, r.state]), [[ours.metadata.uid, "started"]]);
        // Once: the agent reconnected and the replacement stands.
        const onNode = (await kube.pods(ns, "app=ota-agent")).filter((p) =>
          p.spec.nodeName === node
        );
        assertEquals(onNode.map((p) => p.metadata.uid), [replacement.metadata.uid]);
      });
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

/** A pod's `PodImageReady` condition as kubectl reads it. */
async function imageReady(kube: Kube, ns: string, name: string) {
  const pod = await kube.json<Pod>(["--namespace", ns, "get", "pod", name]);
  return pod.status?.conditions?.find((c) => c.type === podImageReady);
}

/** The pull Jobs of the namespace (ADR 0034). */
export const pullJobs = (kube: Kube, ns: string) => kube.jobs<Job>(ns, pullSetLabel);

/** Waits for the pod on `node` to be one other than `old`, not being deleted. */
function replacedOn(kube: Kube, ns: string, node: string, old: Pod): Promise<Pod> {
  return eventually(`a v2 pod on ${node}`, async () => {
    const pod = (await kube.pods(ns, "app=ota-agent"))
      .find((p) => p.spec.nodeName === node && !p.metadata.deletionTimestamp);
    return pod && pod.metadata.uid !== old.metadata.uid ? pod : undefined;
  }, 120_000);
}

/** The revision a pod's `PodNeedUpgrade` True mark names, once it names another than `not`. */
const markedHash = (pod: Pod, not?: string) => {
  const need = pod.status?.conditions?.find((c) => c.type === "PodNeedUpgrade");
  const hash = need?.status === "True" ? need.message?.replace("controllerrevision: ", "") : "";
  return hash && hash !== not ? hash : undefined;
};

const imagePullScenario: Scenario = {
  name:
    "OpenYurt's image pre-pull: imagepull on the edge agent, a Job pulls on the node, PodImageReady True, then the upgrade; an image that cannot be pulled fails the pull and the upgrade answers 403",
  async run(target: E2eTarget, kube: Kube) {
    const ns = "e2e-ota-pull";
    const image = (v: string) => `edgeroll.test/ota-agent:${v}`;
    await kube.installCrd();
    await kube.createNamespace(ns);
    await kube.apply(otaDaemonSet(ns, image("v1")));
    const [node, other] = target.nodes;
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      const marked = await otaPodsMarked(kube, ns, target.nodes.length, image("v2"), eventually);
      const ours = marked.find((p) => p.spec.nodeName === node)!;
      const name = ours.metadata.name;
      const hash = markedHash(ours)!;
      await withEdgeAgent(await target.nodeKubeconfig(node), node, async (agent) => {
        const podUrl = `${agent.url}/openyurt.io/v1/namespaces/${ns}/pods/${name}`;
        const pull = await fetch(`${podUrl}/imagepull`, { method: "POST" });
        assertEquals(
          [pull.status, await pull.text()],
          [200, `Image pre-pull requested for pod ${ns}/${name}`],
        );
        const job = await eventually(
          "the pull Job",
          async () =>
            (await pullJobs(kube, ns)).find((j) => j.metadata.name === pullJobName(name, hash)),
        );
        const spec = job.spec!.template!.spec!;
        assertEquals([spec.nodeName, spec.restartPolicy], [node, "Never"]);
        assertEquals(spec.containers.map((c) => [c.image, c.imagePullPolicy]), [
          [image("v2"), "Always"],
        ]);
        const ready = await eventually("PodImageReady True", async () => {
          const condition = await imageReady(kube, ns, name);
          return condition?.status === "True" ? condition : undefined;
        }, 120_000);
        assertEquals([ready.reason, ready.message], [
          pullImageSuccess,
          `controllerrevision: ${hash}`,
        ]);
        const upgraded = await fetch(`${podUrl}/upgrade`, { method: "POST" });
        assertEquals([upgraded.status, await upgraded.text()], [
          200,
          `Start updating pod ${ns}/${name}`,
        ]);
      });
      const replacement = await replacedOn(kube, ns, node, ours);
      assertEquals(replacement.spec.containers[0].image, image("v2"));

      // An image no registry has: the pull fails on the node, and the upgrade is refused.
      await setOtaImage(kube, ns, image("non-existent"));
      const stale = await eventually(`a new mark on ${other}'s pod`, async () => {
        const pod = (await kube.pods(ns, "app=ota-agent")).find((p) => p.spec.nodeName === other);
        return pod && markedHash(pod, hash) ? pod : undefined;
      });
      const badHash = markedHash(stale, hash)!;
      await withEdgeAgent(await target.nodeKubeconfig(other), other, async (agent) => {
        const podUrl = `${agent.url}/openyurt.io/v1/namespaces/${ns}/pods/${stale.metadata.name}`;
        assertEquals((await fetch(`${podUrl}/imagepull`, { method: "POST" })).status, 200);
        const failed = await eventually("PodImageReady False PullImageFail", async () => {
          const condition = await imageReady(kube, ns, stale.metadata.name);
          return condition?.reason === pullImageFail ? condition : undefined;
        }, 120_000);
        assertEquals(failed.status, "False");
        assertStringIncludes(failed.message ?? "", pullJobName(stale.metadata.name, badHash));
        assertStringIncludes(failed.message ?? "", "ErrImagePull");
        const refused = await fetch(`${podUrl}/upgrade`, { method: "POST" });
        assertEquals(refused.status, 403);
        assertStringIncludes(await refused.text(), `image is not ready, reason: ${pullImageFail}`);
        // The Job that kept failing is gone; the old pod stands.
        await eventually(
          "the failed pull's Job deleted",
          async () =>
            !(await pullJobs(kube, ns)).some((j) =>
              j.metadata.name === pullJobName(stale.metadata.name, badHash)
            ),
        );
        const still = (await kube.pods(ns, "app=ota-agent")).find((p) => p.spec.nodeName === other);
        assertEquals(still?.metadata.uid, stale.metadata.uid);
      });
    });
    await kube.run(["delete", "namespace", ns, "--wait=false"]);
  },
};

export const otaScenarios: Scenario[] = [
  walkthroughScenario,
  apiServerStoppedScenario,
  imagePullScenario,
];
