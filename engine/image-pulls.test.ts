/**
 * OpenYurt's image pre-pull as planned (engine/image-pulls.ts): a pod that asked gets a Job on
 * its node; the Job's pod tells pulled (an image ID) or failed (a pull error) and the result is
 * written on the pod; a request for an older revision, or one whose result is being written, is
 * left alone; a newer request replaces an older Job.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { Keys, type Pod } from "../api/kube-objects.ts";
import {
  type Job,
  podImageReady,
  pullForAnnotation,
  pullJobName,
  pullSetLabel,
} from "../api/image-pull.ts";
import type { CreateJob, Plan, SetPodCondition } from "../api/plan.ts";
import { formatTime } from "./pod-node-state.ts";
import { plan } from "./plan.ts";
import * as f from "./testdata/fleet.ts";

const hash = "v2hash";
const message = `controllerrevision: ${hash}`;

/** A converged OTA fleet of two nodes whose pod on node-0 asked to pull v2 at `askedAt`. */
function asked(askedAt = f.t0, revision = hash): f.Cluster {
  const c = f.yurtCluster("OTA", f.nodes(2));
  for (const pod of c.snapshot.pods) {
    pod.status!.conditions!.push({
      type: Keys.podNeedUpgrade,
      status: "True",
      message,
    });
  }
  c.snapshot.pods[0].status!.conditions!.push({
    type: podImageReady,
    status: "False",
    message: `controllerrevision: ${revision}`,
    lastTransitionTime: formatTime(askedAt),
  });
  return c;
}

const jobName = pullJobName("nginx-node-0", hash);

function pullJob(created = f.t0 + 1000, status: Job["status"] = {}): Job {
  return {
    metadata: {
      name: jobName,
      namespace: "default",
      uid: "uid-job",
      creationTimestamp: formatTime(created),
    },
    status,
  };
}

function jobPod(containerStatuses: unknown[]): Pod {
  return {
    metadata: {
      name: `${jobName}-x7k2p`,
      namespace: "default",
      uid: "uid-job-pod",
      ownerReferences: [{
        apiVersion: "batch/v1",
        kind: "Job",
        name: jobName,
        uid: "uid-job",
        controller: true,
      }],
    },
    spec: { containers: [{ name: "prepull-agent", image: "nginx:1.19.4" }] },
    status: { phase: "Pending", containerStatuses } as Pod["status"],
  };
}

const jobActions = (p: Plan) =>
  p.actions.filter((a) => a.type === "createJob" || a.type === "deleteJob").map((a) =>
    a.type === "createJob" ? `create ${a.job.metadata.name}` : `delete ${a.name}`
  );
const imageReady = (p: Plan) =>
  p.actions.filter((a): a is SetPodCondition =>
    a.type === "setPodCondition" && a.condition.type === podImageReady
  );

Deno.test("image pull: a pod that asked gets a Job on its node pulling every image of the template", () => {
  const c = asked();
  const p = plan({ ...c.snapshot, pulls: { jobs: [], pods: [] } }, f.t0 + 500);
  assertEquals(jobActions(p), [`create image-pre-pull-nginx-node-0-${hash}`]);
  const { job, node } = p.actions.find((a) => a.type === "createJob") as CreateJob;
  assertEquals(node, "node-0");
  assertEquals(job.metadata.ownerReferences, [{
    apiVersion: "v1",
    kind: "Pod",
    name: "nginx-node-0",
    uid: "uid-nginx-node-0",
  }]);
  assertEquals(job.metadata.labels, { [pullSetLabel]: f.setUid });
  assertEquals(job.metadata.annotations, { [pullForAnnotation]: "daemonsets/default/nginx" });
  const spec = job.spec!;
  assertEquals(
    [spec.activeDeadlineSeconds, spec.backoffLimit, spec.ttlSecondsAfterFinished],
    [600, 1, 30],
  );
  const pod = spec.template!.spec!;
  assertEquals([pod.nodeName, pod.restartPolicy], ["node-0", "Never"]);
  assertEquals(pod.containers, [{
    name: "prepull-agent",
    image: "nginx:1.19.4",
    command: ["true"],
    imagePullPolicy: "Always",
  }]);
  assert(pod.tolerations?.some((t) => t.key === "node.kubernetes.io/unreachable"));
  assertEquals(spec.template!.metadata?.labels, { [pullSetLabel]: f.setUid });
  // The other pod asked nothing; the pull is awaited and looked at again.
  assertEquals(p.actions.filter((a) => a.type === "createJob").length, 1);
  assert(p.status.nextCheckAt !== undefined, "a pull in flight is polled");
  assertEquals(p.events.find((e) => e.reason === "PullImageStarted")?.pod, "nginx-node-0");
});

Deno.test("image pull: a Job still pulling is awaited; nothing is written", () => {
  const c = asked();
  const pulls = {
    jobs: [pullJob()],
    pods: [
      jobPod([{ name: "prepull-agent", state: { waiting: { reason: "ContainerCreating" } } }]),
    ],
  };
  const p = plan({ ...c.snapshot, pulls }, f.t0 + 5000);
  assertEquals([jobActions(p), imageReady(p)], [[], []]);
  assertStringIncludes(JSON.stringify(p.awaited), `job/${jobName} pulled`);
});

Deno.test("image pull: an image ID on every container is a pull done: PodImageReady True, the Job left to end and go by its TTL", () => {
  const c = asked();
  const pulled = jobPod([{
    name: "prepull-agent",
    imageID: "docker.io/library/nginx@sha256:ab",
    state: { terminated: { exitCode: 128, reason: "StartError" } },
  }]);
  const p = plan({ ...c.snapshot, pulls: { jobs: [pullJob()], pods: [pulled] } }, f.t0 + 5000);
  const [ready] = imageReady(p);
  assertEquals(
    [ready?.name, ready?.condition.status, ready?.condition.reason, ready?.condition.message],
    ["nginx-node-0", "True", "PullImageSuccess", message],
  );
  assertEquals(jobActions(p), []);
  // A Job that completed is left to its TTL too.
  const complete = pullJob(f.t0 + 1000, {
    succeeded: 1,
    conditions: [{ type: "Complete", status: "True" }],
  });
  const q = plan({ ...c.snapshot, pulls: { jobs: [complete], pods: [] } }, f.t0 + 5000);
  assertEquals([imageReady(q).length, jobActions(q)], [1, []]);
});

Deno.test("image pull: a pull error fails at once: PodImageReady False PullImageFail with why, a Warning, the Job deleted", () => {
  const c = asked();
  const failing = jobPod([{
    name: "prepull-agent",
    state: { waiting: { reason: "ErrImagePull", message: "not found" } },
  }]);
  const p = plan({ ...c.snapshot, pulls: { jobs: [pullJob()], pods: [failing] } }, f.t0 + 5000);
  const [ready] = imageReady(p);
  assertEquals([ready?.condition.status, ready?.condition.reason], ["False", "PullImageFail"]);
  assertEquals(
    ready?.condition.message,
    `${message}, pull image job ${jobName} failed: prepull-agent: ErrImagePull: not found`,
  );
  assertEquals(p.events.find((e) => e.reason === "PullImageFail")?.type, "Warning");
  assertEquals(jobActions(p), [`delete ${jobName}`]);
  // The next step, from a cache that still shows the request, writes nothing more.
  const next = plan({ ...written(c, p), pulls: { jobs: [], pods: [] } }, f.t0 + 6000);
  assertEquals([jobActions(next), imageReady(next)], [[], []]);
});

Deno.test("image pull: a request for an older revision is not pulled; a Job older than a new request is replaced", () => {
  const stale = asked(f.t0, "v1hash");
  assertEquals(jobActions(plan({ ...stale.snapshot, pulls: { jobs: [], pods: [] } }, f.t0)), []);
  // Asked again at t0+10 s after a Job made at t0+1 s had failed and not yet gone.
  const again = asked(f.t0 + 10_000);
  const old = pullJob(f.t0 + 1000);
  const p = plan({ ...again.snapshot, pulls: { jobs: [old], pods: [] } }, f.t0 + 11_000);
  assertEquals([jobActions(p), imageReady(p)], [[`delete ${jobName}`], []]);
  const q = plan({ ...again.snapshot, pulls: { jobs: [], pods: [] } }, f.t0 + 12_000);
  assertEquals(jobActions(q), [`create ${jobName}`]);
});

Deno.test("image pull: only sets in OTA mode pull", () => {
  const c = asked();
  c.snapshot.set.metadata.annotations!["apps.openyurt.io/update-strategy"] =
    "AdvancedRollingUpdate";
  assertEquals(jobActions(plan({ ...c.snapshot, pulls: { jobs: [], pods: [] } }, f.t0)), []);
});

Deno.test("image pull: a Job's name is yurt-manager's, cut to 63 characters with a hash when longer", () => {
  assertEquals(pullJobName("agent-abcde", "6d5f8b9c7"), "image-pre-pull-agent-abcde-6d5f8b9c7");
  const long = "a-very-long-daemonset-name-for-edge-agents-x7k2p-9cq4z";
  const name = pullJobName(long, "6d5f8b9c7");
  assertEquals(name.length <= 63, true, name);
  assert(name.startsWith("image-pre-pull-a-very-long"));
  assert(name !== pullJobName(`${long}x`, "6d5f8b9c7"));
});

/** What the API server holds after `p`'s status write, its pod actions not yet seen. */
function written(c: f.Cluster, p: Plan) {
  return f.apply(c, { ...p, actions: [] }, f.t0).snapshot;
}

// Kruise's pre-download (planPreDownload).

const preDownloadCondition = (p: Plan) =>
  p.conditions.find((c) => c.type === "ImagesPreDownloaded");
const createdOn = (p: Plan) => p.actions.flatMap((a) => a.type === "createJob" ? [a.node] : []);

/** An AdvancedDaemonSet on agent:v1 on five nodes, every pod ready, moved to agent:v2. */
function kruiseFleet(
  annotations: Record<string, string>,
  rollingUpdate: Record<string, unknown> = { maxUnavailable: 1 },
): f.Cluster {
  const spec = { updateStrategy: { type: "RollingUpdate", rollingUpdate } };
  let c = f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet(spec as never, { annotations }) as never,
    pods: [],
    nodes: f.nodes(5),
    revisions: [],
  });
  for (let i = 0; i < 3; i++) {
    c = f.kubelet(f.apply(c, plan(c.snapshot, f.t0 - 3600_000), f.t0 - 3600_000), f.t0 - 3600_000);
  }
  return f.withTemplate(c, "agent:v2", 2);
}

/** The pull Jobs' pods as the kubelet reports them: pulled, or failing on `failing` nodes. */
function pullsRun(c: f.Cluster, failing: Set<string> = new Set()): f.Cluster {
  const s = structuredClone(c.snapshot);
  const pulls = s.pulls ??= { jobs: [], pods: [] };
  for (const job of pulls.jobs) {
    if (pulls.pods.some((p) => p.metadata.ownerReferences?.[0].uid === job.metadata.uid)) continue;
    const node = job.spec!.template!.spec!.nodeName!;
    const pod = jobPod([
      failing.has(node)
        ? {
          name: "prepull-agent",
          state: { waiting: { reason: "ErrImagePull", message: "not found" } },
        }
        : {
          name: "prepull-agent",
          imageID: "agent@sha256:v2",
          state: { terminated: { exitCode: 0 } },
        },
    ]);
    pod.metadata.name = `${job.metadata.name}-pod`;
    pod.metadata.ownerReferences![0].uid = job.metadata.uid!;
    pulls.pods.push(pod);
  }
  return { snapshot: s, serial: c.serial };
}

const predownload = (parallelism: string, extra: Record<string, string> = {}) => ({
  "apps.kruise.io/image-predownload-parallelism": parallelism,
  ...extra,
});

Deno.test("pre-download: the nodes next in the update order pull, parallelism at a time, in Jobs owned by the set", () => {
  const c = kruiseFleet(
    predownload("2", { "apps.kruise.io/image-predownload-timeout-seconds": "120" }),
  );
  const p = plan(c.snapshot, f.t0);
  // maxUnavailable 1: node-4 is updated now; the next two in Kruise's order (names descending) pull.
  assertEquals(p.actions.filter((a) => a.type === "deletePod").map((a) => a.node), ["node-4"]);
  assertEquals(createdOn(p), ["node-3", "node-2"]);
  const job = (p.actions.find((a) => a.type === "createJob") as CreateJob).job;
  assertEquals(job.metadata.ownerReferences?.[0].kind, "AdvancedDaemonSet");
  assertEquals(job.spec?.activeDeadlineSeconds, 120);
  assertEquals(job.spec?.template?.spec?.containers.map((c) => c.image), ["agent:v2"]);
  assertEquals(preDownloadCondition(p)?.reason, "Pulling");
  assertEquals(p.status.imagePreDownload?.pulling, 2);
});

Deno.test("pre-download: results are kept on the old pods; a failed node is reported and the others go on", () => {
  let c = kruiseFleet(predownload("2"));
  c = f.apply(c, plan(c.snapshot, f.t0), f.t0);
  c = pullsRun(c, new Set(["node-2"]));
  const p = plan(c.snapshot, f.t0 + 1000);
  const podOn = (node: string) =>
    c.snapshot.pods.find((x) => x.spec.nodeName === node)!.metadata.name;
  assertEquals(
    imageReady(p).map((a) => [a.name, a.condition.status, a.condition.reason]),
    [[podOn("node-3"), "True", "PullImageSuccess"], [podOn("node-2"), "False", "PullImageFail"]],
  );
  const warning = p.events.find((e) => e.reason === "PullImageFail");
  assertEquals([warning?.type, warning?.onSet], ["Warning", true]);
  assertStringIncludes(warning?.message ?? "", "node-2");
  // The failing Job is deleted (it would retry); the pulled one ends by itself. The next nodes
  // take the two free places.
  assertEquals(jobActions(p).filter((a) => a.startsWith("delete")).length, 1);
  assertEquals(createdOn(p), ["node-1", "node-0"]);
  c = f.apply(c, p, f.t0 + 1000);
  c = pullsRun(c);
  // Once every Job is gone by its TTL, the results on the pods are the record: nothing is pulled again.
  const q0 = plan(c.snapshot, f.t0 + 2000);
  c = f.apply(c, q0, f.t0 + 2000);
  c.snapshot.pulls = { jobs: [], pods: [] };
  const q = plan(c.snapshot, f.t0 + 3000);
  assertEquals(createdOn(q), []);
  assertEquals(q.status.imagePreDownload?.failedNodes, ["node-2"]);
  assertEquals(
    [preDownloadCondition(q)?.status, preDownloadCondition(q)?.reason],
    ["True", "PulledWithFailures"],
  );
});

Deno.test("pre-download: none when the whole set updates in one wave; nodes held back by partition are not pulled", () => {
  const oneWave = plan(kruiseFleet(predownload("5"), { maxUnavailable: "100%" }).snapshot, f.t0);
  assertEquals([createdOn(oneWave), preDownloadCondition(oneWave)?.reason], [[], "OneWave"]);
  // partition 3 of 5: node-4 and node-3 are in scope; node-4 updates now, node-3 pulls.
  const held = plan(
    kruiseFleet(predownload("5"), { maxUnavailable: 1, partition: 3 }).snapshot,
    f.t0,
  );
  assertEquals(createdOn(held), ["node-3"]);
});

Deno.test("pre-download: the rest of the fleet waits for min-updated-ready-pods new pods available", () => {
  let c = kruiseFleet(
    predownload("5", { "apps.kruise.io/image-predownload-min-updated-ready-pods": "1" }),
  );
  let p = plan(c.snapshot, f.t0);
  assertEquals(createdOn(p), []);
  assertEquals(preDownloadCondition(p)?.reason, "WaitingForUpdatedPods");
  // node-4's new pod comes up and is Ready: now the others pull.
  c = f.kubelet(f.apply(c, p, f.t0), f.t0);
  c = f.kubelet(f.apply(c, plan(c.snapshot, f.t0 + 1000), f.t0 + 1000), f.t0 + 1000);
  p = plan(c.snapshot, f.t0 + 2000);
  assertEquals(createdOn(p).length > 0, true, JSON.stringify(p.awaited));
});

Deno.test("pre-download: an invalid min-updated-ready-pods is InvalidSpec with its path; a percent is read", () => {
  const bad = plan(
    kruiseFleet(
      predownload("2", { "apps.kruise.io/image-predownload-min-updated-ready-pods": "x" }),
    )
      .snapshot,
    f.t0,
  );
  const invalid = bad.conditions.find((c) => c.type === "InvalidSpec");
  assertStringIncludes(
    invalid?.message ?? "",
    "metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]",
  );
  const percent = plan(
    kruiseFleet(
      predownload("2", { "apps.kruise.io/image-predownload-min-updated-ready-pods": "40%" }),
    )
      .snapshot,
    f.t0,
  );
  assertEquals(preDownloadCondition(percent)?.message?.startsWith("0 of 2 pods"), true);
});
