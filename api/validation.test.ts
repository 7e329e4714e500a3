import { assertEquals } from "@std/assert";
import { kruiseExamples, migrateFromKruise } from "./testdata/kruise-examples.ts";
import { effectiveRollingUpdate, validateAdvancedDaemonSet } from "./validation.ts";
import { readOpenYurtRollout } from "./openyurt.ts";
import type { DaemonSet } from "./kube-objects.ts";

Deno.test("every Kruise example validates after changing only apiVersion and kind", () => {
  for (const [name, example] of Object.entries(kruiseExamples)) {
    const result = validateAdvancedDaemonSet(migrateFromKruise(example));
    assertEquals([name, result.ok ? [] : result.issues], [name, []]);
  }
});

Deno.test("a template as Go clients write it (creationTimestamp: null) validates; the timestamp reads as absent", () => {
  const set = structuredClone(migrateFromKruise(kruiseExamples.standard)) as {
    spec: { template: { metadata: Record<string, unknown> } };
  };
  set.spec.template.metadata.creationTimestamp = null;
  const result = validateAdvancedDaemonSet(set);
  assertEquals(result.ok, true, JSON.stringify(!result.ok && result.issues));
  assertEquals(result.ok && result.set.spec.template.metadata?.creationTimestamp, undefined);
});

Deno.test("Surging is Standard with maxSurge 1 and maxUnavailable 0 unless given", () => {
  const surging = effectiveRollingUpdate({ rollingUpdateType: "Surging" });
  assertEquals([surging.rollingUpdateType, surging.maxSurge, surging.maxUnavailable], [
    "Standard",
    1,
    0,
  ]);
  const thirty = effectiveRollingUpdate({ rollingUpdateType: "Surging", maxSurge: "30%" });
  assertEquals([thirty.maxSurge, thirty.maxUnavailable], ["30%", 0]);
  const plain = effectiveRollingUpdate(undefined);
  assertEquals([plain.maxUnavailable, plain.maxSurge, plain.partition, plain.paused], [
    1,
    0,
    0,
    false,
  ]);
  assertEquals(
    effectiveRollingUpdate({ rollingUpdateType: "Standard", maxSurge: 2 }).maxUnavailable,
    0,
  );
});

type Mutation = (spec: Record<string, unknown>, set: Record<string, unknown>) => void;
const strategy = (rollingUpdate: Record<string, unknown>): Mutation => (spec) => {
  spec.updateStrategy = { type: "RollingUpdate", rollingUpdate };
};
const ru = "spec.updateStrategy.rollingUpdate";

const invalid: [string, Mutation, string[]][] = [
  ["maxSurge and maxUnavailable both set", strategy({ maxUnavailable: 1, maxSurge: 1 }), [
    `${ru}.maxSurge`,
  ]],
  ["both zero", strategy({ maxUnavailable: 0, maxSurge: "0%" }), [`${ru}.maxUnavailable`]],
  ["malformed percent", strategy({ maxUnavailable: "10 %" }), [`${ru}.maxUnavailable`]],
  ["percent above 100", strategy({ maxSurge: "150%" }), [`${ru}.maxSurge`]],
  ["negative maxUnavailable", strategy({ maxUnavailable: -1 }), [`${ru}.maxUnavailable`]],
  [
    "InPlaceIfPossible with maxSurge",
    strategy({ rollingUpdateType: "InPlaceIfPossible", maxSurge: 1 }),
    [
      `${ru}.maxSurge`,
    ],
  ],
  ["Surging with maxUnavailable", strategy({ rollingUpdateType: "Surging", maxUnavailable: 1 }), [
    `${ru}.maxSurge`,
    `${ru}.maxUnavailable`,
  ]],
  ["negative partition", strategy({ partition: -2 }), [`${ru}.partition`]],
  ["partition above 100%", strategy({ partition: "101%" }), [`${ru}.partition`]],
  ["unknown rollingUpdateType", strategy({ rollingUpdateType: "Fast" }), [
    `${ru}.rollingUpdateType`,
  ]],
  [
    "update selector In without values",
    strategy({
      selector: { matchExpressions: [{ key: "zone", operator: "In" }] },
    }),
    [`${ru}.selector.matchExpressions[0].values`],
  ],
  ["empty selector", (spec) => {
    spec.selector = {};
  }, ["spec.selector"]],
  ["a selector label value no list could carry", (spec) => {
    spec.selector = { matchLabels: { app: "no such value!" } };
    (spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels.app =
      "no such value!";
  }, ["spec.selector.matchLabels.app"]],
  ["a selector key with an empty name part", (spec) => {
    spec.selector = {
      matchLabels: { app: "nginx" },
      matchExpressions: [{ key: "example.com/", operator: "Exists" }],
    };
  }, ["spec.selector.matchExpressions[0].key", "spec.template.metadata.labels"]],
  [
    "an update selector value too long",
    strategy({
      selector: { matchExpressions: [{ key: "zone", operator: "In", values: ["z".repeat(64)] }] },
    }),
    [`${ru}.selector.matchExpressions[0].values[0]`],
  ],
  ["selector not matching the template", (spec) => {
    spec.selector = { matchLabels: { app: "other" } };
  }, ["spec.template.metadata.labels"]],
  ["restartPolicy Never", (spec) => {
    (spec.template as { spec: Record<string, unknown> }).spec.restartPolicy = "Never";
  }, ["spec.template.spec.restartPolicy"]],
  ["activeDeadlineSeconds", (spec) => {
    (spec.template as { spec: Record<string, unknown> }).spec.activeDeadlineSeconds = 30;
  }, ["spec.template.spec.activeDeadlineSeconds"]],
  ["burstReplicas 0", (spec) => {
    spec.burstReplicas = 0;
  }, ["spec.burstReplicas"]],
  ["burstReplicas not a percent", (spec) => {
    spec.burstReplicas = "lots";
  }, ["spec.burstReplicas"]],
  ["negative minReadySeconds", (spec) => {
    spec.minReadySeconds = -5;
  }, ["spec.minReadySeconds"]],
  ["negative revisionHistoryLimit", (spec) => {
    spec.revisionHistoryLimit = -1;
  }, ["spec.revisionHistoryLimit"]],
  ["missing template", (spec) => {
    delete spec.template;
  }, ["spec.template"]],
  ["bad progressive-create-pod", (_spec, set) => {
    set.metadata = {
      name: "x",
      annotations: { "daemonset.kruise.io/progressive-create-pod": "yes" },
    };
  }, ["metadata.annotations[daemonset.kruise.io/progressive-create-pod]"]],
  ["bad predownload timeout under edgeroll's group", (_spec, set) => {
    set.metadata = {
      name: "x",
      annotations: { "apps.edgeroll.dev/image-predownload-timeout-seconds": "0" },
    };
  }, ["metadata.annotations[apps.edgeroll.dev/image-predownload-timeout-seconds]"]],
];

Deno.test("invalid specs are rejected with the field path of each problem", async (t) => {
  for (const [name, mutate, paths] of invalid) {
    await t.step(name, () => {
      const set = migrateFromKruise(kruiseExamples.standard) as unknown as Record<string, unknown>;
      mutate(set.spec as Record<string, unknown>, set);
      const result = validateAdvancedDaemonSet(set);
      assertEquals(result.ok ? [] : result.issues.map((i) => i.path).sort(), paths.sort());
    });
  }
});

function openYurtSet(annotations: Record<string, string>, type = "OnDelete"): DaemonSet {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "nginx-daemonset", annotations },
    spec: {
      selector: { matchLabels: { app: "nginx" } },
      template: { spec: { containers: [{ name: "nginx", image: "nginx:1.19.4" }] } },
      updateStrategy: { type: type as "OnDelete" },
    },
  };
}

Deno.test("OpenYurt annotations: auto, case-insensitive names, default 10%", () => {
  const strategy = "apps.openyurt.io/update-strategy";
  const auto = readOpenYurtRollout(openYurtSet({ [strategy]: "auto" }));
  assertEquals(auto, {
    managed: true,
    ok: true,
    rollout: { mode: "AdvancedRollingUpdate", maxUnavailable: "10%" },
    notices: [],
  });
  const ota = readOpenYurtRollout(
    openYurtSet({ [strategy]: "ota", "apps.openyurt.io/max-unavailable": "3" }),
  );
  assertEquals(ota, {
    managed: true,
    ok: true,
    rollout: { mode: "OTA", maxUnavailable: 3 },
    notices: [],
  });
  assertEquals(readOpenYurtRollout(openYurtSet({})), { managed: false });
});

Deno.test("OpenYurt annotations: bad values and a RollingUpdate set are reported with paths", () => {
  const result = readOpenYurtRollout(openYurtSet({
    "apps.openyurt.io/update-strategy": "fast",
    "apps.openyurt.io/max-unavailable": "-1",
  }, "RollingUpdate"));
  assertEquals(result.managed && !result.ok ? result.issues.map((i) => i.path) : [], [
    "metadata.annotations[apps.openyurt.io/update-strategy]",
    "metadata.annotations[apps.openyurt.io/max-unavailable]",
    "spec.updateStrategy.type",
  ]);
});

Deno.test("OpenYurt annotations: 0 and 0% mean OpenYurt's default, 10%, with a notice", () => {
  for (const zero of ["0", "0%"]) {
    const read = readOpenYurtRollout(openYurtSet({
      "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
      "apps.openyurt.io/max-unavailable": zero,
    }));
    assertEquals(read, {
      managed: true,
      ok: true,
      rollout: { mode: "AdvancedRollingUpdate", maxUnavailable: "10%" },
      notices: [{
        type: "Normal",
        path: "metadata.annotations[apps.openyurt.io/max-unavailable]",
        message: `"${zero}" means OpenYurt's default: 10% is used`,
      }],
    });
  }
});

Deno.test("a predownload parallelism Kruise cannot read is 1, as in Kruise, with a warning", () => {
  const set = migrateFromKruise(kruiseExamples[Object.keys(kruiseExamples)[0]]);
  (set.metadata as { annotations?: Record<string, string> }).annotations = {
    "apps.kruise.io/image-predownload-parallelism": "abc",
  };
  const result = validateAdvancedDaemonSet(set);
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  assertEquals(result.annotations.imagePredownloadParallelism, 1);
  assertEquals(result.notices.map((n) => [n.type, n.path]), [
    ["Warning", "metadata.annotations[apps.kruise.io/image-predownload-parallelism]"],
  ]);
});
