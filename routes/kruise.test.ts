/**
 * Kruise compatibility mode through the routes (ADR 0027): `/convert` as the API server calls
 * it, and a Kruise DaemonSet reconciled by the real planner, owning its pods and revisions as
 * `apps.kruise.io/v1beta1 DaemonSet` and writing its status under Kruise's v1beta1 names.
 */
import { assert, assertEquals } from "@std/assert";
import { plan } from "../engine/plan.ts";
import { harness } from "../tests/doubles/controller-harness.ts";
import type { KubeObject } from "../kube/wire-objects.ts";

const kruiseSet = (image = "agent:1"): KubeObject => ({
  apiVersion: "apps.kruise.io/v1beta1",
  kind: "DaemonSet",
  metadata: { name: "agent", namespace: "edge", uid: "ds-uid", generation: 1 },
  spec: {
    selector: { matchLabels: { app: "agent" } },
    template: {
      metadata: { labels: { app: "agent" } },
      spec: { containers: [{ name: "c", image }] },
    },
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
  },
});

const review = (objects: unknown[], desiredAPIVersion = "apps.kruise.io/v1alpha1") => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request: { uid: "review-1", desiredAPIVersion, objects },
});

function kruiseHarness(kruise: boolean) {
  const h = harness({ kruise, plan });
  h.api.apiGroups.push({ name: "apps.kruise.io", versions: ["apps.kruise.io/v1beta1"] });
  h.api.put("daemonsets.apps.kruise.io", kruiseSet());
  return h;
}

Deno.test("POST /convert answers a ConversionReview, with no token, as the API server calls it", async () => {
  await using h = kruiseHarness(true);
  const set = { ...kruiseSet(), status: { updateRevision: "abc" } };
  const res = await h.request("/convert", {
    auth: false,
    body: JSON.stringify(review([set])),
    headers: { "content-type": "application/json" },
  });
  assertEquals(res.status, 200);
  const { response } = await res.json();
  assertEquals(response.uid, "review-1");
  assertEquals(response.result, { status: "Success" });
  assertEquals(response.convertedObjects[0].apiVersion, "apps.kruise.io/v1alpha1");
  assertEquals(response.convertedObjects[0].status, { daemonSetHash: "abc" });
});

Deno.test("POST /convert: a body that is no ConversionReview is a 400 naming the fields", async () => {
  await using h = kruiseHarness(true);
  const res = await h.request("/convert", {
    auth: false,
    body: JSON.stringify({ kind: "ConversionReview", request: { uid: "" } }),
    headers: { "content-type": "application/json" },
  });
  assertEquals(res.status, 400);
  const { error } = await res.json();
  const paths = error.issues.map((i: { path: string[] }) => i.path.join("."));
  assert(paths.includes("apiVersion"), paths.join(", "));
  assert(paths.includes("request.objects"), paths.join(", "));
});

Deno.test("without --kruise there is no /convert and Kruise's sets are refused, never read", async () => {
  await using h = kruiseHarness(false);
  const convert = await h.request("/convert", { auth: false, body: JSON.stringify(review([])) });
  assertEquals(convert.status, 404);
  const res = await h.request("/reconcile/daemonsets.apps.kruise.io/edge/agent");
  assertEquals(res.status, 403);
  assertEquals((await res.json()).error.reason, "KruiseModeOff");
  assertEquals(h.plans.length, 0);
});

Deno.test("a Kruise DaemonSet is rolled out by the planner: pods and revisions owned as apps.kruise.io/v1beta1, status under Kruise's names", async () => {
  await using h = kruiseHarness(true);
  const res = await h.request("/reconcile/daemonsets.apps.kruise.io/edge/agent");
  assertEquals(res.status, 200, await res.clone().text());
  const pods = [...h.api.objects.pods.values()];
  assertEquals(pods.length, 3);
  for (const pod of pods) {
    assertEquals(pod.metadata.ownerReferences?.[0], {
      apiVersion: "apps.kruise.io/v1beta1",
      kind: "DaemonSet",
      name: "agent",
      uid: "ds-uid",
      controller: true,
      blockOwnerDeletion: true,
    });
  }
  const [revision] = [...h.api.objects.controllerrevisions.values()];
  assertEquals(revision.metadata.ownerReferences?.[0].apiVersion, "apps.kruise.io/v1beta1");
  const set = h.api.objects["daemonsets.apps.kruise.io"].get("edge/agent")!;
  const status = set.status as Record<string, unknown>;
  assertEquals(status.updateRevision, revision.metadata.labels?.["controller-revision-hash"]);
  assertEquals("daemonSetHash" in status, false);
  assertEquals(status.observedGeneration, 1);
  assertEquals(status.desiredNumberScheduled, 3);
});

Deno.test("POST /tick finds Kruise's DaemonSets in --kruise mode, and rolls them", async () => {
  await using h = kruiseHarness(true);
  const res = await h.request("/tick");
  assertEquals(res.status, 200);
  const answer = await res.json();
  assertEquals(answer.served.includes("daemonsets.apps.kruise.io"), true);
  assertEquals(answer.sets, 2, "the AdvancedDaemonSet of the harness and the Kruise set");
  assertEquals(h.api.objects.pods.size, 6, "three pods for each set");
});
