import { assertEquals, assertThrows } from "@std/assert";
import {
  ConversionReview,
  convertKruiseDaemonSet,
  convertReview,
  kruiseAsAdvancedDaemonSet,
  kruiseStatusOf,
} from "./kruise.ts";

const v1alpha1 = {
  apiVersion: "apps.kruise.io/v1alpha1",
  kind: "DaemonSet",
  metadata: {
    name: "agent",
    namespace: "edge",
    annotations: { "daemonset.kruise.io/progressive-create-pod": "true", other: "kept" },
  },
  spec: {
    selector: { matchLabels: { app: "agent" } },
    template: { metadata: { labels: { app: "agent" } }, spec: { containers: [] } },
    updateStrategy: {
      type: "RollingUpdate",
      rollingUpdate: { rollingUpdateType: "Surging", maxSurge: 1, partition: 2 },
    },
    lifecycle: { preDelete: { labelsHandler: { hook: "true" } } },
  },
  status: { daemonSetHash: "abc", numberReady: 3, expectations: [] },
};

Deno.test("v1alpha1 → v1beta1 maps the three differences as Kruise does, and keeps the rest", () => {
  const beta = convertKruiseDaemonSet(v1alpha1, "v1beta1");
  assertEquals(beta.apiVersion, "apps.kruise.io/v1beta1");
  assertEquals(beta.spec.updateStrategy.rollingUpdate, {
    rollingUpdateType: "Standard",
    maxSurge: 1,
    partition: 2,
  });
  assertEquals((beta.spec as Record<string, unknown>).scaleStrategy, { partitionedScaling: true });
  assertEquals(beta.status, { updateRevision: "abc", numberReady: 3, expectations: [] });
  assertEquals(beta.metadata, v1alpha1.metadata);
  assertEquals(beta.spec.lifecycle, v1alpha1.spec.lifecycle);
});

Deno.test("v1beta1 → v1alpha1: partitionedScaling becomes the annotation, updateRevision the hash", () => {
  const beta = {
    apiVersion: "apps.kruise.io/v1beta1",
    kind: "DaemonSet",
    metadata: { name: "agent" },
    spec: { scaleStrategy: { partitionedScaling: true }, minReadySeconds: 5 },
    status: { updateRevision: "def" },
  };
  const alpha = convertKruiseDaemonSet(beta, "v1alpha1");
  assertEquals(alpha.apiVersion, "apps.kruise.io/v1alpha1");
  assertEquals(alpha.spec, { minReadySeconds: 5 });
  assertEquals(alpha.metadata, {
    name: "agent",
    annotations: { "daemonset.kruise.io/progressive-create-pod": "true" },
  });
  assertEquals(alpha.status, { daemonSetHash: "def" });
  // And back: nothing lost.
  const again = convertKruiseDaemonSet(alpha, "v1beta1");
  assertEquals(again.spec, beta.spec);
  assertEquals(again.status, beta.status);
});

Deno.test("a set of another group or kind is refused by name", () => {
  assertThrows(
    () => convertKruiseDaemonSet({ apiVersion: "apps/v1", kind: "DaemonSet" }, "v1beta1"),
    Error,
    "apiVersion apps/v1",
  );
});

Deno.test("the planner's view of a Kruise set, and the status written back", () => {
  const beta = convertKruiseDaemonSet(v1alpha1, "v1beta1");
  const view = kruiseAsAdvancedDaemonSet(beta);
  assertEquals([view.apiVersion, view.kind], ["apps.edgeroll.dev/v1alpha1", "AdvancedDaemonSet"]);
  assertEquals(view.status, v1alpha1.status);
  assertEquals(kruiseStatusOf({ daemonSetHash: "x", numberReady: 1 }), {
    updateRevision: "x",
    numberReady: 1,
  });
});

Deno.test("a ConversionReview answers every object converted, or a Failure and none", () => {
  const review = ConversionReview.parse({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    request: { uid: "u1", desiredAPIVersion: "apps.kruise.io/v1beta1", objects: [v1alpha1] },
  });
  const ok = convertReview(review) as {
    response: {
      uid: string;
      result: { status: string };
      convertedObjects: { apiVersion: string }[];
    };
  };
  assertEquals(ok.response.uid, "u1");
  assertEquals(ok.response.result.status, "Success");
  assertEquals(ok.response.convertedObjects.map((o) => o.apiVersion), ["apps.kruise.io/v1beta1"]);

  const wrongTarget = convertReview({
    ...review,
    request: { ...review.request, desiredAPIVersion: "apps.kruise.io/v2" },
  }) as { response: { result: { status: string; message: string }; convertedObjects: [] } };
  assertEquals(wrongTarget.response.result.status, "Failure");
  assertEquals(wrongTarget.response.convertedObjects, []);

  const mixed = convertReview({
    ...review,
    request: { ...review.request, objects: [v1alpha1, { apiVersion: "v1", kind: "Pod" }] },
  }) as { response: { result: { status: string; message: string }; convertedObjects: [] } };
  assertEquals(mixed.response.result.status, "Failure");
  assertEquals(mixed.response.convertedObjects, []);
});
