/**
 * The real `KubeApi` (client-node, `clientNodeApi`) against the simulator, one call or more for
 * every method in `accessOf`: a wrong path, verb or content type fails here rather than for a
 * user. (A wrong CRD version in one path once made every tick see no AdvancedDaemonSet while
 * the in-memory double, which has no paths, agreed with itself.)
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals, assertRejects } from "@std/assert";
import { edgerollCrds } from "../api/crd.ts";
import { accessOf, clientNodeApi, type KubeApi, type KubeMethod } from "../kube/api.ts";
import { KubeError, toKubeError } from "../kube/errors.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { rolloutStatusObject } from "../api/rollout-status.ts";
import { credentialsLabel } from "../api/analysis.ts";
import { withSim } from "./sim/helpers.ts";

/** Records which methods were called, so the test can prove it covered all of them. */
function recorded(api: KubeApi): { api: KubeApi; called: Set<KubeMethod> } {
  const called = new Set<KubeMethod>();
  const wrapped = new Proxy(api, {
    get(target, property) {
      const value = target[property as KubeMethod];
      if (typeof value !== "function") return value;
      return (param: unknown) => {
        called.add(property as KubeMethod);
        return (value as (p: unknown) => unknown).call(target, param);
      };
    },
  });
  return { api: wrapped, called };
}

async function kubeErrorOf(call: Promise<unknown>): Promise<KubeError> {
  try {
    await call;
  } catch (err) {
    return toKubeError(err, "test");
  }
  throw new Error("expected the call to fail");
}

const ns = "default";
const labels = { app: "agent" };
/** Pods and revisions of the test's own, apart from those the simulated DaemonSet controller makes. */
const probe = { app: "probe" };

Deno.test("clientNodeApi: every method of accessOf works against the simulator", async () => {
  await withSim({ nodes: 2 }, async (sim, kc) => {
    const { api, called } = recorded(clientNodeApi(kc));
    const hasOurGroup = async () =>
      (await api.listApiGroups({})).some((g) =>
        g.name === "apps.edgeroll.dev" && g.versions.includes("apps.edgeroll.dev/v1alpha1")
      );

    assertEquals((await api.getVersion({})).gitVersion.startsWith("v1."), true);
    assertEquals((await api.listCoreResources({})).includes("pods/resize"), true);
    assertEquals(await hasOurGroup(), false);
    assertEquals((await api.listApiGroups({})).some((g) => g.versions.includes("apps/v1")), true);
    for (const crd of edgerollCrds()) {
      sim.store.create("customresourcedefinitions.apiextensions.k8s.io", crd as never);
    }
    assertEquals(await hasOurGroup(), true);

    // Sets of both kinds, made as a user would.
    const template = {
      metadata: { labels },
      spec: { containers: [{ name: "agent", image: "edgeroll.test/agent:v1" }] },
    };
    await kc.makeApiClient(k8s.CustomObjectsApi).createNamespacedCustomObject({
      group: "apps.edgeroll.dev",
      version: "v1alpha1",
      namespace: ns,
      plural: "advanceddaemonsets",
      body: {
        apiVersion: "apps.edgeroll.dev/v1alpha1",
        kind: "AdvancedDaemonSet",
        metadata: { name: "ads" },
        spec: { selector: { matchLabels: labels }, template },
      },
    });
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: "ds" },
        spec: { selector: { matchLabels: labels }, template, updateStrategy: { type: "OnDelete" } },
      },
    });

    const ads = await api.getSet({ kind: "advanceddaemonsets", namespace: ns, name: "ads" });
    assertEquals([ads.kind, ads.metadata.name], ["AdvancedDaemonSet", "ads"]);
    const ds = await api.getSet({ kind: "daemonsets", namespace: ns, name: "ds" });
    assertEquals([ds.kind, ds.metadata.name], ["DaemonSet", "ds"]);
    const names = (list: { items: KubeObject[] }) => list.items.map((o) => o.metadata.name);
    assertEquals(names(await api.listSets({ kind: "advanceddaemonsets" })), ["ads"]);
    assertEquals(names(await api.listSets({ kind: "daemonsets" })), ["ds"]);

    const claimed = await api.replaceSetStatus({
      kind: "advanceddaemonsets",
      object: { ...ads, status: { observedGeneration: 1, desiredNumberScheduled: 2 } },
    });
    assertEquals((claimed.status as { desiredNumberScheduled: number }).desiredNumberScheduled, 2);
    const stale = await kubeErrorOf(
      api.replaceSetStatus({ kind: "advanceddaemonsets", object: { ...ads, status: {} } }),
    );
    assertEquals(stale.status, 409);
    const patched = await api.patchSet({
      kind: "daemonsets",
      namespace: ns,
      name: "ds",
      patch: { metadata: { annotations: { "edgeroll.dev/test": "yes" } } },
    });
    assertEquals(patched.metadata.annotations?.["edgeroll.dev/test"], "yes");
    // A plain DaemonSet's RolloutStatus: absent (a 404 naming it), created, replaced under its
    // resourceVersion (a stale one is 409), listed across namespaces.
    const absent = await kubeErrorOf(api.getRolloutStatus({ namespace: ns, name: "ds" }));
    assertEquals([absent.status, absent.objectName], [404, "ds"]);
    const rolloutStatus = await api.createRolloutStatus({
      namespace: ns,
      body: rolloutStatusObject(patched, { observedGeneration: 1 }) as KubeObject,
    });
    const replaced = await api.replaceRolloutStatus({
      namespace: ns,
      name: "ds",
      body: rolloutStatusObject(patched, { observedGeneration: 2 }, rolloutStatus) as KubeObject,
    });
    // With the counts the RolloutStatus schema defaults, as the API server fills them on decode.
    assertEquals(replaced.status, {
      observedGeneration: 2,
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
    });
    const lostClaim = await kubeErrorOf(api.replaceRolloutStatus({
      namespace: ns,
      name: "ds",
      body: rolloutStatusObject(patched, { observedGeneration: 3 }, rolloutStatus) as KubeObject,
    }));
    assertEquals(lostClaim.status, 409);
    assertEquals(
      (await api.getRolloutStatus({ namespace: ns, name: "ds" })).metadata.ownerReferences?.[0]
        .uid,
      patched.metadata.uid,
    );
    assertEquals(
      (await api.listRolloutStatuses({})).items.map((o) => o.metadata.name),
      ["ds"],
    );

    // The Lease: created, read, replaced under its resourceVersion.
    const lease = await api.createLease({
      namespace: ns,
      body: {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "edgeroll" },
        spec: { holderIdentity: "a", leaseDurationSeconds: 15 },
      },
    });
    const read = await api.getLease({ namespace: ns, name: "edgeroll" });
    assertEquals((read.spec as { holderIdentity: string }).holderIdentity, "a");
    await api.replaceLease({
      namespace: ns,
      name: "edgeroll",
      body: { ...read, spec: { holderIdentity: "b", leaseDurationSeconds: 15 } },
    });
    const staleLease = await kubeErrorOf(
      api.replaceLease({ namespace: ns, name: "edgeroll", body: lease }),
    );
    assertEquals(staleLease.status, 409);

    // Pods: bound by hand to edge-1, so no scheduler moves them.
    const podBody = (name: string): KubeObject => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: probe },
      spec: {
        nodeName: "edge-1",
        containers: [{
          name: "agent",
          image: "edgeroll.test/agent:v1",
          resources: { requests: { cpu: "100m" } },
        }],
      },
    });
    const pod = await api.createPod({ namespace: ns, body: podBody("agent-a") });
    await api.createPod({
      namespace: ns,
      body: { ...podBody("other"), metadata: { name: "other" } },
    });
    assertEquals(
      (await api.getPod({ namespace: ns, name: "agent-a" })).metadata.uid,
      pod.metadata.uid,
    );
    assertEquals(names(await api.listPods({ namespace: ns, labelSelector: "app=probe" })), [
      "agent-a",
    ]);
    assertEquals(
      names(await api.listPods({ nodeName: "edge-1" })).filter((n) => !n?.startsWith("ds-")).sort(),
      ["agent-a", "other"],
    );
    assertEquals(
      names(await api.listPods({ nodeName: "edge-2" })).every((n) => n?.startsWith("ds-")),
      true,
    );
    const relabelled = await api.patchPod({
      namespace: ns,
      name: "agent-a",
      patch: { metadata: { labels: { extra: "1" } } },
    });
    assertEquals(relabelled.metadata.labels, { ...probe, extra: "1" });
    await api.patchPodStatus({
      namespace: ns,
      name: "agent-a",
      patch: { status: { conditions: [{ type: "PodNeedUpgrade", status: "True" }] } },
    });
    const resized = await api.resizePod({
      namespace: ns,
      name: "agent-a",
      patch: {
        spec: { containers: [{ name: "agent", resources: { requests: { cpu: "150m" } } }] },
      },
    });
    const [agent] = (resized.spec as { containers: { resources?: unknown; image: string }[] })
      .containers;
    assertEquals([agent.resources, agent.image], [
      { requests: { cpu: "150m" } },
      "edgeroll.test/agent:v1",
    ]);
    const withCondition = await api.getPod({ namespace: ns, name: "agent-a" });
    const conditions = (withCondition.status as { conditions?: { type: string; status: string }[] })
      .conditions ?? [];
    assertEquals(conditions.find((c) => c.type === "PodNeedUpgrade")?.status, "True");
    const wrongUid = await kubeErrorOf(
      api.deletePod({ namespace: ns, name: "agent-a", uid: "not-its-uid" }),
    );
    assertEquals(wrongUid.status, 409);
    await api.deletePod({ namespace: ns, name: "agent-a", uid: pod.metadata.uid ?? "" });

    const nodes = await api.listNodes({ labelSelector: "kubernetes.io/hostname=edge-2" });
    assertEquals(names(nodes), ["edge-2"]);
    assertEquals(names(await api.listNodes({})), ["edge-1", "edge-2"]);

    const revision = await api.createRevision({
      namespace: ns,
      body: {
        apiVersion: "apps/v1",
        kind: "ControllerRevision",
        metadata: { name: "ads-1", labels: probe },
        data: { spec: { template } },
        revision: 1,
      } as KubeObject,
    });
    assertEquals(names(await api.listRevisions({ namespace: ns, labelSelector: "app=probe" })), [
      "ads-1",
    ]);
    const bumped = await api.patchRevision({
      namespace: ns,
      name: "ads-1",
      patch: { revision: 2 },
    });
    assertEquals((bumped as { revision?: number }).revision, 2);
    await api.deleteRevision({ namespace: ns, name: "ads-1", uid: revision.metadata.uid ?? "" });
    assertEquals(names(await api.listRevisions({ namespace: ns, labelSelector: "app=probe" })), []);

    // Image pull Jobs (ADR 0034): created, listed by label, deleted under their uid.
    const job = await api.createJob({
      namespace: ns,
      body: {
        apiVersion: "batch/v1",
        kind: "Job",
        metadata: { name: "pull-1", labels: probe },
        spec: {
          template: {
            spec: {
              nodeName: "edge-1",
              restartPolicy: "Never",
              containers: [{ name: "pull", image: "edgeroll.test/agent:v2", command: ["true"] }],
            },
          },
        },
      } as KubeObject,
    });
    assertEquals(names(await api.listJobs({ namespace: ns, labelSelector: "app=probe" })), [
      "pull-1",
    ]);
    const wrongJob = await kubeErrorOf(
      api.deleteJob({ namespace: ns, name: "pull-1", uid: "not-its-uid" }),
    );
    assertEquals(wrongJob.status, 409);
    await api.deleteJob({ namespace: ns, name: "pull-1", uid: job.metadata.uid ?? "" });
    assertEquals(names(await api.listJobs({ namespace: ns, labelSelector: "app=probe" })), []);

    // Secrets: an analysis check's credentials, listed by their label and name (ADR 0055).
    for (const [name, secretLabels] of [["creds", { [credentialsLabel]: "true" }], ["plain", {}]]) {
      sim.store.create("secrets", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name, namespace: ns, labels: secretLabels },
        data: { token: btoa("t0ken") },
      } as never);
    }
    const labelled = `${credentialsLabel}=true`;
    for (const [name, found] of [["creds", ["creds"]], ["plain", []]] as const) {
      assertEquals(
        names(await api.listSecrets({ namespace: ns, name, labelSelector: labelled })),
        [...found],
      );
    }

    const event = await api.createEvent({
      namespace: ns,
      body: {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name: "ads.1" },
        involvedObject: { kind: "AdvancedDaemonSet", namespace: ns, name: "ads" },
        reason: "Test",
        message: "recorded",
        type: "Normal",
      } as KubeObject,
    });
    assertEquals(event.metadata.name, "ads.1");

    const valid = await api.createTokenReview({ token: sim.token });
    assertEquals(valid.authenticated, true);
    const invalid = await api.createTokenReview({ token: "not-a-token" });
    assertEquals(invalid.authenticated, false);

    // A resource nobody serves is an error naming the path, not an empty answer.
    sim.store.delete(
      "customresourcedefinitions.apiextensions.k8s.io",
      "",
      "advanceddaemonsets.apps.edgeroll.dev",
    );
    const gone = await assertRejects(() => api.listSets({ kind: "advanceddaemonsets" }), KubeError);
    assertEquals(gone.status, 404);
    assertEquals(gone.operation, "GET /apis/apps.edgeroll.dev/v1alpha1/advanceddaemonsets");

    assertEquals([...called].sort(), (Object.keys(accessOf) as KubeMethod[]).sort());
  });
});
