/**
 * What can be checked of cluster/kruise-manager.ts without the kruise-manager binary (CI's test
 * stage does not build it): its command line, the objects it installs, how it reads its log and
 * metrics, and that it says what to build when the binary is missing. The run itself is
 * `deno task kruise-manager:smoke`.
 */
import { assert, assertEquals, assertRejects, assertThrows } from "@std/assert";
import { stringify } from "yaml";
import type { ClusterState } from "./control-plane.ts";
import {
  clientRequests,
  daemonSetWebhookConfigurations,
  daemonSetWorkersStarted,
  kruiseCrds,
  kruiseManagerCommand,
  startKruiseManager,
  webhookConfigurationNames,
  withConversionWebhook,
} from "./kruise-manager.ts";

const command = kruiseManagerCommand({
  kubeconfigPath: "/work/kruise-manager.kubeconfig",
  workDir: "/work/kruise-manager",
  ports: { metrics: 10001, health: 10002, webhook: 10003 },
});
const flag = (name: string) =>
  command.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

Deno.test("kruise-manager runs alone, with its own kubeconfig, leader election and pprof off", () => {
  assertEquals(flag("kubeconfig"), "/work/kruise-manager.kubeconfig");
  assertEquals(flag("enable-leader-election"), "false");
  assertEquals(flag("enable-pprof"), "false");
});

Deno.test("kruise-manager listens on loopback only where a flag lets it choose", () => {
  assertEquals(flag("metrics-addr"), "127.0.0.1:10001");
  assertEquals(flag("health-probe-addr"), "127.0.0.1:10002");
  // Its webhook server's host is not a flag (main.go binds 0.0.0.0); its port is.
  assertEquals(command.env.WEBHOOK_PORT, "10003");
  // The API server calls it at this host, and its certificate is made for it.
  assertEquals(command.env.WEBHOOK_HOST, "127.0.0.1");
});

Deno.test("kruise-manager runs without kruise-daemon and without pod webhooks", () => {
  const gates = Object.fromEntries(
    (flag("feature-gates") ?? "").split(",").map((g) => g.split("=")),
  );
  assertEquals(gates, { KruiseDaemon: "false", PodWebhook: "false" });
});

Deno.test("kruise-manager writes only under its work directory", () => {
  assertEquals(flag("protection-log-path"), "/work/kruise-manager/protection-log");
  assertEquals(command.env.WEBHOOK_CERT_DIR, "/work/kruise-manager/webhook-certs");
  assertEquals(command.env.WEBHOOK_CERT_WRITER, "fs");
});

Deno.test("kruise-manager is given its DaemonSet's CRD and ImagePullJob's, which it needs", () => {
  assert("apps.kruise.io_daemonsets.yaml" in kruiseCrds);
  assert("apps.kruise.io_imagepulljobs.yaml" in kruiseCrds);
  // No CRD of a controller that would run: each of these has no gate that turns it off.
  for (const running of ["clonesets", "statefulsets", "sidecarsets", "broadcastjobs"]) {
    assertEquals(Object.keys(kruiseCrds).filter((f) => f.includes(running)), []);
  }
});

Deno.test("the DaemonSet CRD converts through kruise-manager on loopback, the rest unchanged", () => {
  const crd = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "daemonsets.apps.kruise.io" },
    spec: { group: "apps.kruise.io", versions: [{ name: "v1beta1" }] },
  };
  assertEquals(withConversionWebhook(crd, 10003), {
    ...crd,
    spec: {
      ...crd.spec,
      conversion: {
        strategy: "Webhook",
        webhook: {
          clientConfig: { url: "https://127.0.0.1:10003/convert" },
          conversionReviewVersions: ["v1", "v1beta1"],
        },
      },
    },
  });
});

/** A webhook of the shape of Kruise's config/webhook/manifests.yaml (not its text). */
function webhook(name: string, group: string, resource: string) {
  return {
    name,
    admissionReviewVersions: ["v1"],
    clientConfig: { service: { name: "webhook-service", namespace: "system", path: `/${name}` } },
    failurePolicy: "Fail",
    rules: [{
      apiGroups: [group],
      apiVersions: ["v1alpha1", "v1beta1"],
      operations: ["CREATE", "UPDATE"],
      resources: [resource],
    }],
    sideEffects: "None",
  };
}

const manifests = [
  {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "MutatingWebhookConfiguration",
    metadata: { name: "mutating-webhook-configuration" },
    webhooks: [
      webhook("mpod", "", "pods"),
      webhook("mdaemonset", "apps.kruise.io", "daemonsets"),
      webhook("mcloneset", "apps.kruise.io", "clonesets"),
    ],
  },
  {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: "validating-webhook-configuration" },
    webhooks: [
      webhook("vdaemonset", "apps.kruise.io", "daemonsets"),
      // The built-in DaemonSet is not Kruise's.
      webhook("vbuiltindaemonset", "apps", "daemonsets"),
    ],
  },
].map((d) => `---\n${stringify(d)}`).join("");

Deno.test("only Kruise's DaemonSet webhooks are registered, under the names kruise-manager reads", () => {
  const configurations = daemonSetWebhookConfigurations(manifests);
  assertEquals(
    configurations.map((c) => [
      c.kind,
      (c.metadata as { name: string }).name,
      (c.webhooks as { name: string }[]).map((w) => w.name),
    ]),
    [
      ["MutatingWebhookConfiguration", webhookConfigurationNames.MutatingWebhookConfiguration, [
        "mdaemonset",
      ]],
      ["ValidatingWebhookConfiguration", webhookConfigurationNames.ValidatingWebhookConfiguration, [
        "vdaemonset",
      ]],
    ],
  );
});

Deno.test("webhook manifests without a DaemonSet webhook are refused, not installed empty", () => {
  const withoutValidating = manifests.split("---\n").filter((d) => !d.includes("Validating"))
    .join("---\n");
  assertThrows(
    () => daemonSetWebhookConfigurations(withoutValidating),
    Error,
    "no ValidatingWebhookConfiguration",
  );
  assertThrows(
    () => daemonSetWebhookConfigurations(manifests.replaceAll("daemonsets", "nodes")),
    Error,
    "has no webhook for daemonsets.apps.kruise.io",
  );
});

Deno.test("the DaemonSet controller's start is read from klogr's lines and klog's", () => {
  const klogr =
    'I1125 18:47:45.1 1 controller.go:242] "msg"="Starting workers" "controller"="daemonset-controller" "worker count"=3';
  const klog =
    'I1125 18:47:45.1 1 controller.go:242] "Starting workers" controller="daemonset-controller" worker count=3';
  assert(daemonSetWorkersStarted(`other\n${klogr}\n`));
  assert(daemonSetWorkersStarted(klog));
  assert(
    !daemonSetWorkersStarted(klogr.replace("daemonset-controller", "pod-readiness-controller")),
  );
  assert(!daemonSetWorkersStarted(klogr.replace("Starting workers", "Starting EventSource")));
});

Deno.test("client requests are summed over every code, host and verb", () => {
  const metrics = [
    "# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.",
    "# TYPE rest_client_requests_total counter",
    'rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 120',
    'rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 7',
    'rest_client_requests_total{code="409",host="127.0.0.1:6443",method="PUT"} 2',
    'rest_client_request_duration_seconds_count{host="127.0.0.1:6443",verb="GET"} 999',
  ].join("\n");
  assertEquals(clientRequests(metrics), 129);
  assertEquals(clientRequests(""), 0);
});

Deno.test("without the binary, it says what to build and starts nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const state: ClusterState = {
      workDir: `${dir}/work`,
      kubeconfigPath: `${dir}/admin.kubeconfig`,
      server: "https://127.0.0.1:1",
      nodes: ["edge-1"],
      processes: [],
      apiserverArgs: [],
    };
    await assertRejects(
      () => startKruiseManager(state, { binDir: `${dir}/bin`, logPath: `${dir}/km.log` }),
      Error,
      "run cluster/build.sh --kruise-manager first",
    );
    await assertRejects(() => Deno.stat(state.workDir), Deno.errors.NotFound);
    await assertRejects(() => Deno.stat(`${dir}/km.log`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
