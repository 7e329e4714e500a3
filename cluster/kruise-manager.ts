/**
 * OpenKruise's kruise-manager, run out of cluster against cluster/'s control plane: the Kruise
 * contender of the benchmark (issue #16, ADR 0030). `cluster/build.sh --kruise-manager` builds it
 * from the Kruise module cluster/go/kruise-e2e pins and puts the module's CRDs and webhook
 * configurations beside it, in cluster/bin/kruise-config.
 *
 * `startKruiseManager` installs what the binary needs on the API server, gives it an identity of
 * its own (user `kruise-manager`, bound to cluster-admin), starts it detached and returns once its
 * DaemonSet controller runs. What it serves and what is off, and why, is ADR 0030:
 * - leader election off;
 * - its webhook server cannot be turned off (main.go waits for it before it sets up any
 *   controller), so it serves on loopback what concerns a Kruise DaemonSet: the CRD's conversion
 *   and the DaemonSet's defaulting and validation. No other webhook is registered with the API
 *   server, and the pod webhooks are off (feature gate PodWebhook=false);
 * - no kruise-daemon on kwok's nodes: KruiseDaemon=false, as Kruise's chart sets it without one;
 * - only two CRDs: its DaemonSet's, and ImagePullJob's, without which it refuses to start. The
 *   other controllers find no CRD of theirs and stay off.
 */
import { parse, parseAllDocuments } from "yaml";
import { clientKubeconfig, type ClusterState, defaultBinDir } from "./control-plane.ts";
import { kubectl, replaceOrCreate, runKubectl } from "./kubectl.ts";
import {
  fileSize,
  freePort,
  isAlive,
  logSince,
  logTail,
  requireBuilt,
  sleep,
  startDetached,
  type StartedProcess,
  stopProcesses,
} from "./processes.ts";

/** The user the API server authenticates it as, and its audit log names. */
export const kruiseManagerUser = "kruise-manager";

/** Bound to cluster-admin for `kruiseManagerUser`. */
const bindingName = "edgeroll:kruise-manager";

/**
 * The files of the module's config/crd/bases it is given (cluster/bin/kruise-config/crd/bases),
 * and why. Kruise's controllers have no switch of their own: each one whose kind is not served
 * does nothing, and most others are behind a feature gate. A CRD is given when kruise-manager
 * needs it, or when a gate keeps its controller off anyway: an absent kind costs
 * utildiscovery.DiscoverGVK four tries over 16 s before it gives up, and kruise-manager asks for
 * about twenty kinds one after the other before and while it starts its controllers.
 */
export const kruiseCrds: Record<string, string> = {
  "apps.kruise.io_daemonsets.yaml": "its DaemonSet controller, the one that matters here",
  "apps.kruise.io_imagepulljobs.yaml":
    "required: fieldindex.RegisterFieldIndexes indexes ImagePullJobs unconditionally, and main " +
    "exits without the kind; its controller is off (KruiseDaemon=false)",
  "apps.kruise.io_containerrecreaterequests.yaml": "controller off: KruiseDaemon=false",
  "apps.kruise.io_nodeimages.yaml": "controller off: KruiseDaemon=false",
  "apps.kruise.io_podprobemarkers.yaml":
    "controller off: KruiseDaemon=false turns off PodProbeMarkerGate",
  "apps.kruise.io_nodepodprobes.yaml":
    "controller off: KruiseDaemon=false turns off PodProbeMarkerGate",
  "apps.kruise.io_resourcedistributions.yaml":
    "controller off: ResourceDistributionGate is off by default",
  "apps.kruise.io_workloadspreads.yaml":
    "controller off: PodWebhook=false turns off WorkloadSpread",
  "policy.kruise.io_podunavailablebudgets.yaml":
    "controller off: PodWebhook=false turns off both PodUnavailableBudget gates",
};

const daemonSetCrdName = "daemonsets.apps.kruise.io";

/**
 * The two webhook configurations kruise-manager requires by name (its webhook controller fails
 * until it can read both), given only the DaemonSet's webhooks of its module's
 * config/webhook/manifests.yaml. The names are the module's with the `kruise-` prefix its
 * kustomization adds.
 */
export const webhookConfigurationNames = {
  MutatingWebhookConfiguration: "kruise-mutating-webhook-configuration",
  ValidatingWebhookConfiguration: "kruise-validating-webhook-configuration",
} as const;

export interface KruiseManagerPorts {
  metrics: number;
  health: number;
  webhook: number;
}

export interface KruiseManagerOptions {
  /** Where cluster/build.sh put kruise-manager and kruise-config (default cluster/bin). */
  binDir?: string;
  /** Its stdout and stderr, appended. */
  logPath: string;
  /** Where its kubeconfig (user `kruise-manager`) is written; default the cluster's work dir. */
  kubeconfigPath?: string;
  /** Where it reaches the API server (a forwarder's URL, for instance); default directly. */
  server?: string;
  /** How long it may take to settle (default 10 minutes). */
  timeoutMs?: number;
  /**
   * How long it must send no request to count as settled (default 20 s: discovery waits at most
   * 12.5 s between two tries).
   */
  quietMs?: number;
}

export interface KruiseManager {
  pid: number;
  process: StartedProcess;
  /** Prometheus text (controller-runtime's and client-go's metrics), on loopback. */
  metricsUrl: string;
  /** Its readiness probe, on loopback: 200 once its webhook server answers. */
  readyzUrl: string;
  startup: KruiseManagerStartup;
  user: string;
  kubeconfigPath: string;
  /** The command line it runs with, after the binary. */
  args: string[];
  /** The environment added to ours: the webhook server's settings. */
  env: Record<string, string>;
  /** Stops it by PID (SIGTERM, then SIGKILL), then removes its webhook configurations. */
  stop(): Promise<void>;
}

/**
 * What kruise-manager runs with: flags (main.go and the packages that register their own) and
 * the environment its webhook package reads (pkg/webhook/util/util.go).
 */
export function kruiseManagerCommand(
  options: { kubeconfigPath: string; workDir: string; ports: KruiseManagerPorts },
): { args: string[]; env: Record<string, string> } {
  const { kubeconfigPath, workDir, ports } = options;
  return {
    args: [
      `--kubeconfig=${kubeconfigPath}`,
      // One instance, nothing to elect; it would otherwise wait for a Lease in kruise-system.
      "--enable-leader-election=false",
      `--metrics-addr=127.0.0.1:${ports.metrics}`,
      `--health-probe-addr=127.0.0.1:${ports.health}`,
      // On by default, on every interface (:8090).
      "--enable-pprof=false",
      // No kruise-daemon on the nodes; no pod webhook (SidecarSet, PodUnavailableBudget,
      // WorkloadSpread…), whose calls would slow every pod creation in the cluster.
      "--feature-gates=KruiseDaemon=false,PodWebhook=false",
      // Default /log: a directory of our own.
      `--protection-log-path=${workDir}/protection-log`,
    ],
    env: {
      // A host makes it register URLs (https://host:port/path) instead of Service references,
      // and write its self-signed certificates to files instead of a Secret.
      WEBHOOK_HOST: "127.0.0.1",
      WEBHOOK_PORT: String(ports.webhook),
      WEBHOOK_CERT_DIR: `${workDir}/webhook-certs`,
      WEBHOOK_CERT_WRITER: "fs",
    },
  };
}

type Json = Record<string, unknown>;

/**
 * Kruise's DaemonSet CRD as its kustomization installs it: conversion through kruise-manager's
 * `/convert`. The URL is the one it registers itself (from WEBHOOK_HOST and WEBHOOK_PORT); it
 * adds the caBundle once it has made its certificate.
 */
export function withConversionWebhook(crd: Json, webhookPort: number): Json {
  const spec = crd.spec as Json;
  return {
    ...crd,
    spec: {
      ...spec,
      conversion: {
        strategy: "Webhook",
        webhook: {
          clientConfig: { url: `https://127.0.0.1:${webhookPort}/convert` },
          conversionReviewVersions: ["v1", "v1beta1"],
        },
      },
    },
  };
}

interface Webhook {
  name: string;
  rules?: { apiGroups?: string[]; resources?: string[] }[];
}

/**
 * The module's webhook configurations (config/webhook/manifests.yaml) with only the webhooks of
 * Kruise's DaemonSet, under the names kruise-manager looks for. Fails if either kind is missing
 * or holds no DaemonSet webhook: a new Kruise version that moved them must be looked at.
 */
export function daemonSetWebhookConfigurations(manifestsYaml: string): Json[] {
  const documents = parseAllDocuments(manifestsYaml)
    .map((d) => d.toJS() as Json | null)
    .filter((d): d is Json => d !== null);
  return Object.entries(webhookConfigurationNames).map(([kind, name]) => {
    const configuration = documents.find((d) => d.kind === kind);
    if (!configuration) throw new Error(`Kruise's webhook manifests have no ${kind}`);
    const webhooks = (configuration.webhooks as Webhook[] ?? []).filter((w) =>
      w.rules?.some((r) =>
        r.apiGroups?.includes("apps.kruise.io") && r.resources?.includes("daemonsets")
      )
    );
    if (webhooks.length === 0) {
      throw new Error(`Kruise's ${kind} has no webhook for daemonsets.apps.kruise.io`);
    }
    return { ...configuration, metadata: { name }, webhooks };
  });
}

/**
 * Starts kruise-manager against the cluster. Fails with its log's tail if it exits or its
 * DaemonSet controller has not started in time; whatever it started is stopped then.
 */
export async function startKruiseManager(
  state: ClusterState,
  options: KruiseManagerOptions,
): Promise<KruiseManager> {
  const binDir = options.binDir ?? defaultBinDir;
  const binary = `${binDir}/kruise-manager`;
  const configDir = `${binDir}/kruise-config`;
  await requireBuilt([binary, `${configDir}/webhook/manifests.yaml`], "--kruise-manager");
  const admin = state.kubeconfigPath;
  const workDir = `${state.workDir}/kruise-manager`;
  await Deno.mkdir(`${workDir}/protection-log`, { recursive: true });
  await Deno.mkdir(`${workDir}/webhook-certs`, { recursive: true });
  const ports = { metrics: freePort(), health: freePort(), webhook: freePort() };

  const kubeconfigPath = await clientKubeconfig(
    state,
    kruiseManagerUser,
    `/CN=${kruiseManagerUser}`,
    { path: options.kubeconfigPath, server: options.server },
  );
  await kubectl(admin, ["apply", "-f", "-"], JSON.stringify(clusterAdminBinding()));

  for (const file of Object.keys(kruiseCrds)) {
    let crd = parse(await Deno.readTextFile(`${configDir}/crd/bases/${file}`)) as Json;
    if ((crd.metadata as Json).name === daemonSetCrdName) {
      crd = withConversionWebhook(crd, ports.webhook);
    }
    await replaceOrCreate(admin, crd);
  }
  for (
    const configuration of daemonSetWebhookConfigurations(
      await Deno.readTextFile(`${configDir}/webhook/manifests.yaml`),
    )
  ) {
    await replaceOrCreate(admin, configuration);
  }
  await kubectl(admin, [
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    ...Object.keys(kruiseCrds).map((f) => `customresourcedefinition/${crdNameOf(f)}`),
  ]);

  const { args, env } = kruiseManagerCommand({ kubeconfigPath, workDir, ports });
  const logStart = await fileSize(options.logPath);
  const process = await startDetached("kruise-manager", binary, args, options.logPath, env);
  const stop = async () => {
    await stopProcesses([process]);
    await removeWebhookConfigurations(admin);
  };
  const readyzUrl = `http://127.0.0.1:${ports.health}/readyz`;
  const metricsUrl = `http://127.0.0.1:${ports.metrics}/metrics`;
  let startup: KruiseManagerStartup;
  try {
    startup = await untilSettled(
      process,
      { readyz: readyzUrl, metrics: metricsUrl },
      logStart,
      options.timeoutMs ?? 600_000,
      options.quietMs ?? 20_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pid: process.pid,
    process,
    metricsUrl,
    readyzUrl,
    startup,
    user: kruiseManagerUser,
    kubeconfigPath,
    args,
    env,
    stop,
  };
}

/** Seconds from its start to each step of its own start-up. */
export interface KruiseManagerStartup {
  /** Its readiness probe answered 200: its webhook server serves what the API server calls. */
  readySeconds: number;
  /** Its DaemonSet controller's caches have synced and its workers run. */
  controllerSeconds: number;
  /** It has sent no request for `quietMs`: it has set up (or given up on) every controller. */
  settledSeconds: number;
}

/**
 * Until its readiness probe answers 200, its log says the DaemonSet controller's workers started
 * (its caches have synced), and its client has sent no request for `quietMs` (it asks discovery
 * about the kinds of its other controllers for minutes after its DaemonSet controller runs;
 * returning earlier would count those requests as the DaemonSet's).
 */
async function untilSettled(
  process: StartedProcess,
  urls: { readyz: string; metrics: string },
  logStart: number,
  timeoutMs: number,
  quietMs: number,
): Promise<KruiseManagerStartup> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  const seconds = () => Math.round((Date.now() - started) / 100) / 10;
  let readySeconds: number | undefined;
  let controllerSeconds: number | undefined;
  let requests: { count: number; since: number } | undefined;
  while (true) {
    if (!(await isAlive(process))) {
      throw new Error(`kruise-manager exited while starting:\n${logTail(process.logPath, 30)}`);
    }
    if (readySeconds === undefined) {
      if (await fetchText(urls.readyz) !== undefined) readySeconds = seconds();
    } else if (controllerSeconds === undefined) {
      if (daemonSetWorkersStarted(await logSince(process.logPath, logStart))) {
        controllerSeconds = seconds();
      }
    } else {
      const count = clientRequests(await fetchText(urls.metrics) ?? "");
      if (requests === undefined || count !== requests.count) {
        requests = { count, since: Date.now() };
      } else if (Date.now() - requests.since >= quietMs) {
        return { readySeconds, controllerSeconds, settledSeconds: seconds() };
      }
    }
    if (Date.now() > deadline) {
      const step = readySeconds === undefined
        ? "never became ready"
        : controllerSeconds === undefined
        ? "is ready but its DaemonSet controller has not started"
        : `still sends requests (${requests?.count} so far)`;
      throw new Error(
        `kruise-manager ${step} after ${timeoutMs / 1000}s; its log ends:\n` +
          logTail(process.logPath, 30),
      );
    }
    await sleep(readySeconds === undefined ? 250 : 1000);
  }
}

/** The body of a 2xx answer, or undefined. */
async function fetchText(url: string): Promise<string | undefined> {
  try {
    const response = await fetch(url);
    const text = await response.text();
    return response.ok ? text : undefined;
  } catch {
    return undefined;
  }
}

/** Requests its client has sent (client-go's `rest_client_requests_total`, every code and verb). */
export function clientRequests(metrics: string): number {
  let total = 0;
  for (const line of metrics.split("\n")) {
    const match = line.match(/^rest_client_requests_total(?:\{[^}]*\})?\s+(\S+)/);
    if (match) total += Number(match[1]);
  }
  return total;
}

/**
 * Whether controller-runtime logged the start of the DaemonSet controller's workers, in klogr's
 * words (`"msg"="Starting workers" "controller"="daemonset-controller" …`) or klog's
 * (`"Starting workers" controller="daemonset-controller" …`).
 */
export function daemonSetWorkersStarted(log: string): boolean {
  return log.split("\n").some((line) =>
    /"Starting workers"/.test(line) && /\b"?controller"?="daemonset-controller"/.test(line)
  );
}

function clusterAdminBinding(): Json {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: bindingName },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: kruiseManagerUser }],
  };
}

/** Best effort: they name a port nobody serves any more, and refuse every DaemonSet write. */
async function removeWebhookConfigurations(kubeconfig: string): Promise<void> {
  await runKubectl(kubeconfig, [
    "delete",
    "--ignore-not-found",
    "--wait=false",
    "--request-timeout=10s",
    `mutatingwebhookconfiguration/${webhookConfigurationNames.MutatingWebhookConfiguration}`,
    `validatingwebhookconfiguration/${webhookConfigurationNames.ValidatingWebhookConfiguration}`,
  ]).catch(() => {});
}

/** `apps.kruise.io_daemonsets.yaml` → `daemonsets.apps.kruise.io`. */
function crdNameOf(file: string): string {
  const [group, plural] = file.replace(/\.yaml$/, "").split("_");
  return `${plural}.${group}`;
}
