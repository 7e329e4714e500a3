/**
 * Kruise Advanced DaemonSet manifests (`apps.kruise.io/v1alpha1`, kind DaemonSet) built from the
 * examples of Kruise's documentation (seeds 002/003): each doc example shows one field with the
 * rest elided (`# ...`), so it is completed here with the same small guestbook base.
 */
type Manifest = { apiVersion: string; kind: string; metadata: object; spec: object };

function kruise(spec: object, annotations?: Record<string, string>): Manifest {
  return {
    apiVersion: "apps.kruise.io/v1alpha1",
    kind: "DaemonSet",
    metadata: { name: "sample-ds", namespace: "default", ...(annotations ? { annotations } : {}) },
    spec: {
      selector: { matchLabels: { app: "guestbook-daemon" } },
      template: {
        metadata: { labels: { app: "guestbook-daemon" } },
        spec: {
          containers: [{ name: "guestbook", image: "openkruise/guestbook:v1" }],
          tolerations: [{ key: "node-role.kubernetes.io/master", effect: "NoSchedule" }],
        },
      },
      ...spec,
    },
  };
}

export const kruiseExamples: Record<string, Manifest> = {
  standard: kruise({
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { rollingUpdateType: "Standard" } },
  }),
  selector: kruise({
    updateStrategy: {
      type: "RollingUpdate",
      rollingUpdate: { selector: { matchLabels: { nodeType: "canary" } } },
    },
  }),
  partition: kruise({
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 10 } },
  }),
  progressiveCreate: kruise(
    { updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 10 } } },
    { "daemonset.kruise.io/progressive-create-pod": "true" },
  ),
  paused: kruise({ updateStrategy: { rollingUpdate: { paused: true } } }),
  surging: kruise({
    updateStrategy: { rollingUpdate: { rollingUpdateType: "Surging", maxSurge: "30%" } },
  }),
  imagePredownload: kruise({}, { "apps.kruise.io/image-predownload-parallelism": "10" }),
  preDeleteLabels: kruise({
    lifecycle: { preDelete: { labelsHandler: { "example.io/block-deleting": "true" } } },
  }),
  markPodNotReady: kruise({
    lifecycle: {
      preDelete: { markPodNotReady: true, finalizersHandler: ["example.io/unready-blocker"] },
    },
  }),
  everything: kruise({
    updateStrategy: {
      type: "RollingUpdate",
      rollingUpdate: {
        rollingUpdateType: "InPlaceIfPossible",
        maxUnavailable: "20%",
        partition: "10%",
        paused: false,
      },
    },
    minReadySeconds: 10,
    burstReplicas: "50%",
    revisionHistoryLimit: 5,
  }),
};

/** The whole migration: apiVersion and kind, nothing else. */
export function migrateFromKruise(manifest: Manifest): Manifest {
  return structuredClone({
    ...manifest,
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
  });
}
