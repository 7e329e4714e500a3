/**
 * Kruise Rollout's manager (openkruise/rollouts), run out of cluster against a kubeconfig (the
 * real control plane's, or sim's), as its own docs/contributing/debug.md runs it: its webhooks
 * served on loopback with certificates it makes itself, the URLs and CA bundles it writes into
 * its webhook configurations and its CRDs' conversion. `cluster/build.sh --kruise-rollout` builds
 * it from the module cluster/go/kruise-rollout pins and puts the module's CRDs, webhook
 * configurations and e2e test data beside it, in cluster/bin/kruise-rollout-config (issue 37).
 *
 * `startKruiseRolloutManager` installs what the manager requires before it starts (its main
 * fails after 20 s otherwise): its four CRDs, Rollout's and BatchRelease's with the conversion
 * webhook its kustomization patches in, and both webhook configurations under the names its
 * kustomization gives them, with the object selectors it patches in. It returns once its webhook
 * server answers and the configurations carry its CA; `stop` stops it by PID and removes both
 * configurations (their webhooks fail closed once nobody serves them).
 *
 * Its webhook server binds 0.0.0.0 (hard-coded in pkg/webhook/server.go at v0.6.2, no flag); the
 * addresses it registers are loopback ones. Leader election off; metrics and probes on loopback.
 */
import { parse, parseAllDocuments } from "yaml";
import { defaultBinDir } from "./control-plane.ts";
import { kubectl, kubectlJson, replaceOrCreate, runKubectl } from "./kubectl.ts";
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

type Json = Record<string, unknown>;

/** The module's kustomization prefixes every name with this (config/default). */
const namePrefix = "kruise-rollout-";

/** The CRDs of config/crd/bases, and which of them config/crd/patches turn to webhook conversion. */
const crdFiles = [
  "rollouts.kruise.io_rollouts.yaml",
  "rollouts.kruise.io_batchreleases.yaml",
  "rollouts.kruise.io_rollouthistories.yaml",
  "rollouts.kruise.io_trafficroutings.yaml",
];
const conversionPatches = ["webhook_in_rollouts.yaml", "webhook_in_batchreleases.yaml"];

export interface KruiseRolloutManager {
  pid: number;
  process: StartedProcess;
  /** The port its webhook server listens on (every interface; registered as 127.0.0.1). */
  webhookPort: number;
  /** Stops it by PID (SIGTERM, then SIGKILL), then removes its webhook configurations. */
  stop(): Promise<void>;
}

export interface KruiseRolloutManagerOptions {
  /** Where cluster/build.sh put the manager and its config (default cluster/bin). */
  binDir?: string;
  /** Its stdout and stderr, appended. */
  logPath: string;
  /** Its certificates and scratch files. */
  workDir: string;
  /** How long it may take to start (default 2 minutes). */
  timeoutMs?: number;
  /** klog's verbosity (`-v`), for a closer look at what its controllers do (default 0). */
  verbosity?: number;
}

/** The directory of the module's files that cluster/build.sh copied beside the binaries. */
export function kruiseRolloutConfigDir(binDir = defaultBinDir): string {
  return `${binDir}/kruise-rollout-config`;
}

/**
 * A CRD of config/crd/bases with the conversion patch of config/crd/patches for it, if any, laid
 * over its spec as kustomize's strategic merge does for these maps. The patch names a Service;
 * the manager replaces it with its URL and CA (its crd package rewrites every CRD whose strategy
 * is Webhook), so the Service need not exist.
 */
export function withConversionPatch(crd: Json, patches: Json[]): Json {
  const name = (crd.metadata as Json).name;
  const patch = patches.find((p) => (p.metadata as Json).name === name);
  if (!patch) return crd;
  return {
    ...crd,
    spec: { ...(crd.spec as Json), ...(patch.spec as Json) },
  };
}

interface Webhook {
  name: string;
  clientConfig?: { service?: Json; url?: string };
  [field: string]: unknown;
}

/**
 * The webhook configurations of config/webhook/manifests.yaml as config/default installs them:
 * prefixed names, the object selectors of patch_manifests.yaml merged in by webhook name, and
 * the Service reference under its prefixed name in the manager's namespace. Fails if either kind
 * is missing: a new version that moved them must be looked at.
 */
export function webhookConfigurations(manifestsYaml: string, patchYaml: string): Json[] {
  const documents = (text: string) =>
    parseAllDocuments(text).map((d) => d.toJS() as Json | null).filter((d): d is Json => !!d);
  const manifests = documents(manifestsYaml);
  const patches = documents(patchYaml);
  return ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"].map((kind) => {
    const configuration = manifests.find((d) => d.kind === kind);
    if (!configuration) throw new Error(`Kruise Rollout's webhook manifests have no ${kind}`);
    const patch = patches.find((d) => d.kind === kind);
    const webhooks = (configuration.webhooks as Webhook[]).map((webhook) => {
      const patched = (patch?.webhooks as Webhook[] | undefined)?.find((w) =>
        w.name === webhook.name
      );
      const service = webhook.clientConfig?.service;
      return {
        ...webhook,
        ...patched,
        clientConfig: service
          ? {
            ...webhook.clientConfig,
            service: {
              ...service,
              namespace: "kruise-rollout",
              name: `${namePrefix}${service.name}`,
            },
          }
          : webhook.clientConfig,
      };
    });
    const name = `${namePrefix}${(configuration.metadata as Json).name}`;
    return { ...configuration, metadata: { name }, webhooks };
  });
}

/**
 * Starts the manager against `kubeconfig` (cluster-admin: it writes CRDs and webhook
 * configurations). Fails with its log's tail if it exits or does not come up in time; whatever
 * it started is stopped then.
 */
export async function startKruiseRolloutManager(
  kubeconfig: string,
  options: KruiseRolloutManagerOptions,
): Promise<KruiseRolloutManager> {
  const binDir = options.binDir ?? defaultBinDir;
  const binary = `${binDir}/kruise-rollout-manager`;
  const config = kruiseRolloutConfigDir(binDir);
  await requireBuilt(
    [binary, `${config}/webhook/manifests.yaml`, `${config}/crd/bases`],
    "--kruise-rollout",
  );
  const patches = await Promise.all(
    conversionPatches.map(async (f) =>
      parse(await Deno.readTextFile(`${config}/crd/patches/${f}`)) as Json
    ),
  );
  const crdNames: string[] = [];
  for (const file of crdFiles) {
    const crd = parse(await Deno.readTextFile(`${config}/crd/bases/${file}`)) as Json;
    crdNames.push(String((crd.metadata as Json).name));
    await replaceOrCreate(kubeconfig, withConversionPatch(crd, patches));
  }
  const configurations = webhookConfigurations(
    await Deno.readTextFile(`${config}/webhook/manifests.yaml`),
    await Deno.readTextFile(`${config}/webhook/patch_manifests.yaml`),
  );
  for (const configuration of configurations) await replaceOrCreate(kubeconfig, configuration);
  await kubectl(kubeconfig, [
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    ...crdNames.map((n) => `customresourcedefinition/${n}`),
  ]);

  const ports = { metrics: freePort(), health: freePort(), webhook: freePort() };
  await Deno.mkdir(`${options.workDir}/webhook-certs`, { recursive: true });
  const args = [
    `--kubeconfig=${kubeconfig}`,
    "--leader-elect=false",
    `--metrics-bind-address=127.0.0.1:${ports.metrics}`,
    `--health-probe-bind-address=127.0.0.1:${ports.health}`,
    ...(options.verbosity ? [`--v=${options.verbosity}`] : []),
  ];
  // pkg/webhook/util/util.go: a host makes it register URLs (https://host:port/path) and write
  // its self-signed certificates to files instead of a Secret.
  const env = {
    WEBHOOK_HOST: "127.0.0.1",
    WEBHOOK_PORT: String(ports.webhook),
    WEBHOOK_CERT_DIR: `${options.workDir}/webhook-certs`,
    POD_NAMESPACE: "kruise-rollout",
  };
  const logStart = await fileSize(options.logPath);
  const process = await startDetached("kruise-rollout-manager", binary, args, options.logPath, env);
  const names = configurations.map((c) => `${c.kind}/${(c.metadata as Json).name}`);
  const stop = async () => {
    await stopProcesses([process]);
    // Best effort: they name a port nobody serves any more, and fail closed.
    await runKubectl(kubeconfig, [
      "delete",
      "--ignore-not-found",
      "--wait=false",
      "--request-timeout=10s",
      ...names.map((n) => n.toLowerCase()),
    ]).catch(() => {});
  };
  try {
    await untilServing(process, kubeconfig, names, ports, logStart, options.timeoutMs ?? 120_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: process.pid, process, webhookPort: ports.webhook, stop };
}

/**
 * Until it logged `starting manager` (its webhook controller has written URLs and CA bundles, or
 * main would have exited), its readiness probe answers, its webhook port accepts connections and
 * every webhook of both configurations names its URL with a CA bundle.
 */
async function untilServing(
  process: StartedProcess,
  kubeconfig: string,
  names: string[],
  ports: { health: number; webhook: number },
  logStart: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let waitingFor = "its log to say `starting manager`";
  while (Date.now() < deadline) {
    if (!(await isAlive(process))) {
      throw new Error(
        `kruise-rollout-manager exited while starting:\n${logTail(process.logPath, 30)}`,
      );
    }
    if (!(await logSince(process.logPath, logStart)).includes("starting manager")) {
      await sleep(250);
      continue;
    }
    waitingFor = "its readiness probe";
    const ready = await fetch(`http://127.0.0.1:${ports.health}/readyz`)
      .then(async (r) => (await r.body?.cancel(), r.ok), () => false);
    if (ready) {
      waitingFor = `its webhook server on port ${ports.webhook}`;
      const listening = await Deno.connect({ hostname: "127.0.0.1", port: ports.webhook })
        .then((c) => (c.close(), true), () => false);
      if (listening) {
        waitingFor = "its webhook configurations to carry its URL and CA";
        if (await registered(kubeconfig, names, ports.webhook)) return;
      }
    }
    await sleep(250);
  }
  throw new Error(
    `kruise-rollout-manager did not come up in ${
      timeoutMs / 1000
    } s, waiting for ${waitingFor}:\n` +
      logTail(process.logPath, 30),
  );
}

async function registered(kubeconfig: string, names: string[], port: number): Promise<boolean> {
  for (const name of names) {
    const configuration = await kubectlJson<{ webhooks?: Webhook[] }>(kubeconfig, ["get", name]);
    const ok = (configuration.webhooks ?? []).every((w) => {
      const client = w.clientConfig as { url?: string; caBundle?: string } | undefined;
      return client?.caBundle && client.url?.startsWith(`https://127.0.0.1:${port}/`);
    });
    if (!ok) return false;
  }
  return true;
}
