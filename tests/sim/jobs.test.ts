/**
 * sim's Job controller as kubectl sees it: a Job pinned to a node runs to completion, a pod
 * whose image cannot be pulled waits in ErrImagePull until the Job's deadline, a crashing one
 * fails past backoffLimit, a finished Job goes after its TTL with its pods, and a Job whose
 * pods would restart Always is refused.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import type { Sim } from "../../sim/start.ts";
import { eventually } from "../../lib/eventually.ts";
import { kubectl, withSim } from "./helpers.ts";

// deno-lint-ignore no-explicit-any
type Any = Record<string, any>;

function job(name: string, image: string, extra: Any = {}): string {
  return JSON.stringify({
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name, namespace: "default" },
    spec: {
      backoffLimit: 1,
      ...extra,
      template: {
        spec: {
          nodeName: "edge-1",
          restartPolicy: "Never",
          containers: [{ name: "pull", image, command: ["/bin/true"] }],
        },
      },
    },
  });
}

async function get(sim: Sim, args: string[]): Promise<Any> {
  const out = await kubectl(sim, ["get", "-o", "json", ...args]);
  assertEquals(out.code, 0, out.stderr);
  return JSON.parse(out.stdout);
}

async function apply(sim: Sim, manifest: string): Promise<void> {
  const out = await kubectl(sim, ["apply", "-f", "-"], manifest);
  assertEquals(out.code, 0, out.stderr);
}

const until = <T>(what: string, probe: () => Promise<T | false>) =>
  eventually(what, probe, { timeoutMs: 30_000, intervalMs: 200 });

const condition = (job: Any, type: string) =>
  (job.status?.conditions ?? []).find((c: Any) => c.type === type);

Deno.test("sim jobs: a Job pinned to a node completes; its pod ran the image and Succeeded", async () => {
  await withSim({}, async (sim) => {
    await apply(sim, job("pull-ok", "registry.local/agent:2"));
    const waited = await kubectl(sim, [
      "wait",
      "--for=condition=complete",
      "job/pull-ok",
      "--timeout=30s",
    ]);
    assertEquals(waited.code, 0, waited.stderr);
    const done = await get(sim, ["job", "pull-ok"]);
    const uid = done.metadata.uid;
    assertEquals(done.spec.selector, {
      matchLabels: { "batch.kubernetes.io/controller-uid": uid },
    });
    assertEquals([done.status.succeeded, done.status.active], [1, 0]);
    assertEquals(condition(done, "SuccessCriteriaMet")?.status, "True");
    assert(done.status.completionTime);
    const pods = (await get(sim, ["pods", "-l", "job-name=pull-ok"])).items;
    assertEquals(pods.length, 1);
    const [pod] = pods;
    assertEquals(pod.metadata.ownerReferences[0].kind, "Job");
    assertEquals(pod.metadata.labels["batch.kubernetes.io/controller-uid"], uid);
    assertEquals(pod.status.phase, "Succeeded");
    const [container] = pod.status.containerStatuses;
    assertEquals(container.state.terminated.exitCode, 0);
    assertEquals(container.state.terminated.reason, "Completed");
    assert(container.imageID.includes("@sha256:"), container.imageID);
  });
});

Deno.test("sim jobs: an image that cannot be pulled waits in ErrImagePull until the deadline fails the Job, and its pod is deleted", async () => {
  await withSim({}, async (sim) => {
    // A Job's durations are the clock's seconds, not scaled by sim's speed.
    await apply(sim, job("pull-bad", "registry.local/agent:bad", { activeDeadlineSeconds: 3 }));
    await until("the pull to fail", async () => {
      const [pod] = (await get(sim, ["pods", "-l", "job-name=pull-bad"])).items;
      const waiting = pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
      return waiting === "ErrImagePull" || waiting === "ImagePullBackOff";
    });
    const failed = await until("the Job to fail", async () => {
      const failed = condition(await get(sim, ["job", "pull-bad"]), "Failed");
      return failed?.status === "True" && failed;
    });
    assertEquals(failed.reason, "DeadlineExceeded");
    assertEquals(failed.message, "Job was active longer than specified deadline");
    await until(
      "the pod deleted",
      async () => (await get(sim, ["pods", "-l", "job-name=pull-bad"])).items.length === 0,
    );
  });
});

Deno.test("sim jobs: a crashing container fails its pod; past backoffLimit the Job fails", async () => {
  await withSim({ speed: 200 }, async (sim) => {
    await apply(sim, job("pull-crash", "registry.local/agent:crash"));
    const done = await until("the Job to fail", async () => {
      const job = await get(sim, ["job", "pull-crash"]);
      return condition(job, "Failed")?.status === "True" && job;
    });
    assertEquals(condition(done, "Failed").reason, "BackoffLimitExceeded");
    assertEquals(done.status.failed, 2, "backoffLimit 1: the first failure is retried once");
    const pods = (await get(sim, ["pods", "-l", "job-name=pull-crash"])).items;
    assertEquals(pods.map((p: Any) => p.status.phase), ["Failed", "Failed"]);
    assertEquals(pods[0].status.containerStatuses[0].state.terminated.exitCode, 1);
  });
});

Deno.test("sim jobs: a finished Job is deleted after ttlSecondsAfterFinished, its pods with it", async () => {
  await withSim({}, async (sim) => {
    await apply(sim, job("pull-ttl", "registry.local/agent:3", { ttlSecondsAfterFinished: 2 }));
    await until(
      "the Job to complete",
      async () => condition(await get(sim, ["job", "pull-ttl"]), "Complete")?.status === "True",
    );
    const gone = await until("the Job deleted", async () => {
      const out = await kubectl(sim, ["get", "job", "pull-ttl"]);
      return out.code !== 0 && out;
    });
    assertStringIncludes(gone.stderr, "not found");
    await until(
      "its pod deleted",
      async () => (await get(sim, ["pods", "-l", "job-name=pull-ttl"])).items.length === 0,
    );
  });
});

Deno.test("sim jobs: a Job whose pods restart Always is refused with the field", async () => {
  await withSim({}, async (sim) => {
    const always = JSON.parse(job("always", "registry.local/agent:2"));
    always.spec.template.spec.restartPolicy = "Always";
    const out = await kubectl(sim, ["apply", "-f", "-"], JSON.stringify(always));
    assertEquals(out.code, 1);
    assertStringIncludes(
      out.stderr,
      'spec.template.spec.restartPolicy: Unsupported value: "Always"',
    );
  });
});
