import { assertEquals } from "@std/assert";
import { AdvancedDaemonSet } from "./advanced-daemonset.ts";

Deno.test("a minimal AdvancedDaemonSet gets Kruise's defaults", () => {
  const ads = AdvancedDaemonSet.parse({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: { name: "sample-ds", namespace: "default" },
    spec: {
      selector: { matchLabels: { app: "nginx" } },
      template: {
        metadata: { labels: { app: "nginx" } },
        spec: { containers: [{ name: "nginx", image: "nginx:1.19.4" }] },
      },
    },
  });
  assertEquals(ads.spec.updateStrategy.type, "RollingUpdate");
  assertEquals(ads.spec.burstReplicas, 250);
  assertEquals(ads.spec.revisionHistoryLimit, 10);
  assertEquals(ads.spec.minReadySeconds, 0);
});

Deno.test("an AdvancedDaemonSet with the wrong kind is rejected with the field path", () => {
  const result = AdvancedDaemonSet.safeParse({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "DaemonSet",
    metadata: {},
    spec: { selector: {}, template: { spec: { containers: [] } } },
  });
  assertEquals(result.success, false);
  assertEquals(result.error?.issues.map((i) => i.path.join(".")), ["kind"]);
});
