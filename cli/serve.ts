/**
 * Runs the controller app as a server (`edgeroll serve`): Deno's HTTP server, the real
 * client-node, the real planner and, if asked, an in-process tick. The app itself stays
 * runtime-neutral; this file is where Deno comes in.
 */
import {
  type Command,
  intOption,
  type ParsedArgs,
  stringOption,
  UsageError,
} from "../lib/command.ts";
import { parseDuration } from "../lib/duration.ts";
import { untilStopSignal } from "../lib/signals.ts";
import { createLogger, type Logger } from "../lib/log.ts";
import { plan } from "../engine/plan.ts";
import { clientNodeApi, kubeWatch } from "../kube/api.ts";
import { SnapshotCache } from "../kube/cache.ts";
import type { WatchFn } from "../kube/watcher.ts";
import { KubeClient } from "../kube/client.ts";
import { type KubeConfig, kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import { type ControllerApp, createApp } from "../routes/app.ts";
import { defaultLimits, type RequestLimits } from "../routes/limits.ts";
import {
  type Authenticator,
  staticTokenAuthenticator,
  tokenReviewAuthenticator,
} from "../routes/auth.ts";
import { listen, type TlsFiles } from "../routes/listener.ts";
import { Metrics } from "../controller/metrics.ts";
import { kruiseSetKind, type SetKind } from "../api/set-ref.ts";
import { LeaderElection, type LeaseTimes, leaseTimesFor } from "../controller/leader.ts";
import { realTimers } from "../lib/timers.ts";
import { createAnalyzer } from "../controller/analysis.ts";

export const analysisHostsHelp =
  "comma-separated host:port list the sets' analysis checks may reach (Prometheus, HTTP checks), e.g. prometheus.monitoring:9090; no other host is requested (default: none)";

export interface ControllerOptions {
  kubeConfig: KubeConfig;
  /** 0 picks a free port. */
  port: number;
  hostname?: string;
  /** Builds the authenticator once the Kubernetes client exists (TokenReview needs it). */
  auth: (kube: KubeClient) => Authenticator;
  /** Runs the tick in-process this often; none when absent. */
  tickEveryMs?: number;
  resyncSeconds?: number;
  eventDelayMs?: number;
  eventQuietMs?: number;
  /** Keep nodes and pods in watch-backed caches (default true; kube/cache.ts). */
  cache?: boolean;
  /** Serve HTTPS with this certificate and key, read again when they change. */
  tls?: TlsFiles;
  /** How often the TLS files are read again (ms; default 30 s). */
  tlsReloadMs?: number;
  logger?: Logger;
  /** What one request may ask (routes/limits.ts). */
  limits?: Partial<RequestLimits>;
  /** Kruise compatibility mode: reconcile `daemonsets.apps.kruise.io` too (ADR 0027). */
  kruise?: boolean;
  /** `host:port`s the analysis checks may reach (ADR 0055); none when absent. */
  analysisHosts?: string[];
  /**
   * Do the work only while holding this Lease (ADR 0038): watch and tick then, answer calls by
   * a claim before. Without it, the replica does the work from the start.
   */
  lease?: { namespace: string; name: string; identity: string; times?: LeaseTimes };
}

export interface RunningController {
  url: string;
  controller: ControllerApp;
  kube: KubeClient;
  /** Resolves when the Lease was lost: the replica must stop (controller-runtime exits). */
  leaseLost: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Builds a Kubernetes client whose requests are counted in `metrics`, that logs which kinds of
 * set the API server serves when that changes, with node and pod caches if `cache` is set.
 */
export function meteredKubeClient(
  kubeConfig: KubeConfig,
  metrics: Metrics,
  logger: Logger,
  options: { cache: boolean; kruise?: boolean; cacheActive?: boolean },
): KubeClient {
  return new KubeClient(clientNodeApi(kubeConfig), {
    onRequest: (record) => metrics.observeRequest(record),
    onServedChange: (served) => logger.info(servedMessage(served, options.kruise), { served }),
    kruise: options.kruise,
    cache: options.cache
      ? (api) =>
        new SnapshotCache({
          api,
          watch: countedWatch(kubeWatch(kubeConfig), metrics),
          logger,
          active: options.cacheActive,
        })
      : undefined,
  });
}

/** `watch`, each request it starts counted in `metrics`. */
function countedWatch(watch: WatchFn, metrics: Metrics): WatchFn {
  return (path, query, onLine, done, view) => {
    metrics.observeWatch();
    return watch(path, query, onLine, done, view);
  };
}

/** What discovery says of the kinds of set, and what a missing CRD means. */
function servedMessage(served: SetKind[], kruise = false): string {
  const missing = [
    ...(served.includes("advanceddaemonsets")
      ? []
      : ["AdvancedDaemonSets (no apps.edgeroll.dev/v1alpha1 in discovery: is the CRD installed?)"]),
    ...(kruise && !served.includes(kruiseSetKind)
      ? [
        "Kruise DaemonSets (no apps.kruise.io/v1beta1 in discovery: is the kruise-compat CRD installed?)",
      ]
      : []),
  ];
  return missing.length === 0
    ? `served kinds of set: ${served.join(", ")}`
    : `not served: ${missing.join("; ")}; served: ${served.join(", ")}`;
}

export function startController(options: ControllerOptions): RunningController {
  const logger = options.logger ?? createLogger();
  const metrics = new Metrics();
  const kube = meteredKubeClient(options.kubeConfig, metrics, logger, {
    cache: options.cache !== false,
    kruise: options.kruise,
    cacheActive: options.lease === undefined,
  });
  const controller = createApp({
    kube,
    plan,
    logger,
    metrics,
    auth: options.auth(kube),
    resyncSeconds: options.resyncSeconds,
    eventDelayMs: options.eventDelayMs,
    eventQuietMs: options.eventQuietMs,
    limits: options.limits,
    analyzer: createAnalyzer({
      allowedHosts: options.analysisHosts ?? [],
      readCredentials: (namespace, name) => kube.readAnalysisCredentials(namespace, name),
    }),
  });
  const listener = listen(controller.app.fetch, {
    hostname: options.hostname ?? "0.0.0.0",
    port: options.port,
    tls: options.tls,
    reloadMs: options.tlsReloadMs,
    logger,
  });
  const url = listener.url;
  logger.info("controller listening", {
    url,
    tick: options.tickEveryMs ?? null,
    cache: kube.cache !== undefined,
  });

  let ticking: Promise<unknown> = Promise.resolve();
  let timer: ReturnType<typeof setInterval> | undefined;
  /** What the replica doing the work starts: its watches and its tick. */
  const startWork = () => {
    if (kube.cache) {
      kube.cache.activate();
      // The kinds of set to watch; /readyz and the tick ask again and keep them current.
      kube.servedSetKinds().catch((err) =>
        logger.warn("discovery failed; the next tick or readiness probe asks again", {
          error: (err as Error).message,
        })
      );
    }
    if (options.tickEveryMs === undefined || timer !== undefined) return;
    timer = setInterval(() => {
      // One tick at a time: a slow tick is not stacked on by the next.
      ticking = ticking.then(() =>
        controller.tick().then(
          (answer) =>
            logger.info("tick", {
              full: answer.full,
              served: answer.served,
              sets: answer.sets,
              reconciled: answer.reconciled.length,
            }),
          (err) => logger.error("tick failed", { error: (err as Error).message }),
        )
      );
    }, options.tickEveryMs);
  };

  let loseLease = () => {};
  const leaseLost = new Promise<void>((resolve) => loseLease = resolve);
  const election = options.lease &&
    new LeaderElection({
      api: kube.api,
      ...options.lease,
      timers: realTimers,
      logger,
      onStartedLeading: startWork,
      onStoppedLeading: loseLease,
    });
  if (election) election.start();
  else startWork();

  let stopped: Promise<void> | undefined;
  return {
    url,
    controller,
    kube,
    leaseLost,
    stop() {
      stopped ??= (async () => {
        if (timer !== undefined) clearInterval(timer);
        await ticking;
        await controller.close();
        // After the work stopped: the next holder starts where this one's last claim left off.
        await election?.stop();
        await kube.cache?.close();
        await listener.close();
      })();
      return stopped;
    },
  };
}

/** The static token from `--token-file` or `EDGEROLL_TOKEN`, or TokenReview with `--allow`. */
export function authFromArgs(args: ParsedArgs): (kube: KubeClient) => Authenticator {
  const tokenFile = stringOption(args, "token-file");
  const token = tokenFile !== undefined
    ? Deno.readTextFileSync(tokenFile)
    : Deno.env.get("EDGEROLL_TOKEN");
  const allow = stringOption(args, "allow")?.split(",").map((s) => s.trim()).filter(Boolean) ?? [];
  if (token !== undefined) {
    if (token.trim() === "") {
      throw new UsageError(`the token ${tokenFile ? `in ${tokenFile} ` : ""}is empty`);
    }
    return () => staticTokenAuthenticator(token);
  }
  if (allow.length === 0) {
    throw new UsageError("give --token-file (or EDGEROLL_TOKEN) or --allow for TokenReview");
  }
  const audiences = stringOption(args, "audience")?.split(",").map((s) => s.trim()).filter(
    Boolean,
  );
  return (kube) => tokenReviewAuthenticator(kube, { allowed: allow, audiences });
}

export const serveCommand: Command = {
  name: "serve",
  summary: "Run the controller: the reconcile, events and tick routes over HTTP.",
  usage:
    "[--kubeconfig PATH] [--port P] [--host H] [--tls-cert F --tls-key F] [--tick 30s] [--no-cache] [--token-file F | --allow SUBJECTS [--audience A]] [--max-body-bytes N] [--max-events N] [--max-header-bytes N] [--request-timeout 60s] [--kruise] [--event-delay 0ms [--event-quiet 100ms]] [--lease NAMESPACE/NAME [--lease-identity ID] [--lease-duration 15s]] [--analysis-hosts HOST:PORT,...]",
  options: {
    kubeconfig: { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "tls-cert": { type: "string" },
    "tls-key": { type: "string" },
    tick: { type: "string" },
    resync: { type: "string" },
    "no-cache": { type: "boolean" },
    "token-file": { type: "string" },
    allow: { type: "string" },
    audience: { type: "string" },
    "max-body-bytes": { type: "string" },
    "max-events": { type: "string" },
    "max-header-bytes": { type: "string" },
    "request-timeout": { type: "string" },
    kruise: { type: "boolean" },
    lease: { type: "string" },
    "event-delay": { type: "string" },
    "event-quiet": { type: "string" },
    "lease-identity": { type: "string" },
    "lease-duration": { type: "string" },
    "analysis-hosts": { type: "string" },
  },
  help: {
    kubeconfig: kubeconfigHelp,
    port: "port to listen on (default 8080)",
    host: "address to listen on (default 0.0.0.0)",
    "tls-cert":
      "serve HTTPS with this PEM certificate (chain), read again every 30 s and swapped when it changes",
    "tls-key": "the PEM private key of --tls-cert",
    tick: "run the tick in-process this often, e.g. 30s (default: only POST /tick)",
    resync: "full resync period of the tick (default 10m)",
    "no-cache":
      "list nodes and pods on every reconcile instead of keeping them from watches (for a controller scaled to zero between events)",
    "token-file": "file holding the static bearer token (or set EDGEROLL_TOKEN)",
    allow: "comma-separated users or group:NAME allowed after TokenReview",
    audience: "audiences the TokenReview requires, e.g. edgeroll-controller (projected tokens)",
    "max-body-bytes":
      `largest request body read; larger ones answer 413 (default ${defaultLimits.bodyBytes})`,
    "max-events":
      `most CloudEvents in one /events batch; more answer 413 (default ${defaultLimits.events})`,
    "max-header-bytes":
      `largest request line and headers; larger ones answer 431 (default ${defaultLimits.headerBytes})`,
    "request-timeout": `longest a request may take before it answers 504 (default ${
      defaultLimits.requestMs / 1000
    }s)`,
    kruise:
      "also reconcile Kruise's DaemonSets (daemonsets.apps.kruise.io) and serve their conversion at /convert, in place of kruise-manager's DaemonSet controller (manifests/overlays/kruise-compat)",
    "event-delay":
      "wait this long before a change's reconcile, so a burst of changes folds into fewer steps (default: none)",
    "event-quiet":
      "with --event-delay: end the wait once no change came for the set for this long (a burst that is over; default: the whole delay)",
    lease:
      "do the work (watches, tick) only while holding this coordination.k8s.io Lease, e.g. edgeroll-system/edgeroll-controller; other replicas answer calls by a claim and take over when it expires",
    "lease-identity":
      "this replica's name in the Lease (default: POD_NAME from the environment, else the host name and process id)",
    "lease-duration":
      "how long a Lease not renewed stays its holder's (default 15s; renewed every 2/15 of it, given up after 2/3)",
    "analysis-hosts": analysisHostsHelp,
  },
  async run(args) {
    const tick = stringOption(args, "tick");
    const resync = stringOption(args, "resync");
    const certFile = stringOption(args, "tls-cert");
    const keyFile = stringOption(args, "tls-key");
    if ((certFile === undefined) !== (keyFile === undefined)) {
      throw new UsageError("--tls-cert and --tls-key go together");
    }
    const eventDelayMs = optionalDuration(args, "event-delay");
    const eventQuietMs = optionalDuration(args, "event-quiet");
    if (eventQuietMs !== undefined && !(eventQuietMs < (eventDelayMs ?? 0))) {
      throw new UsageError("--event-quiet must be shorter than --event-delay");
    }
    const running = startController({
      kubeConfig: loadKubeConfig(stringOption(args, "kubeconfig")),
      port: intOption(args, "port", 8080, { min: 0, max: 65535 }),
      hostname: stringOption(args, "host"),
      auth: authFromArgs(args),
      tickEveryMs: tick === undefined ? undefined : parseDuration(tick, "tick"),
      resyncSeconds: resync === undefined ? undefined : parseDuration(resync, "resync") / 1000,
      cache: args.values["no-cache"] !== true,
      kruise: args.values.kruise === true,
      tls: certFile === undefined ? undefined : { certFile, keyFile: keyFile! },
      lease: leaseFromArgs(args),
      analysisHosts: analysisHostsFromArgs(args),
      eventDelayMs,
      eventQuietMs,
      limits: {
        bodyBytes: intOption(args, "max-body-bytes", defaultLimits.bodyBytes, { min: 1024 }),
        events: intOption(args, "max-events", defaultLimits.events, { min: 1 }),
        headerBytes: intOption(args, "max-header-bytes", defaultLimits.headerBytes, {
          min: 1024,
        }),
        requestMs: parseDuration(
          stringOption(args, "request-timeout") ?? `${defaultLimits.requestMs / 1000}s`,
          "request-timeout",
        ),
      },
    });
    const lost = await Promise.race([
      untilStopSignal().then(() => false),
      running.leaseLost.then(() => true),
    ]);
    await running.stop();
    // A replica that lost its Lease exits non-zero and is restarted as a candidate, as
    // controller-runtime's managers are: nothing it started outlives its leading.
    return lost ? 1 : 0;
  },
};

/** `--analysis-hosts`, each `host:port` checked; none when absent. */
export function analysisHostsFromArgs(args: ParsedArgs): string[] {
  const text = stringOption(args, "analysis-hosts");
  if (text === undefined) return [];
  return text.split(",").map((entry) => entry.trim()).filter((e) => e !== "").map((entry) => {
    const match = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(entry);
    if (!match || Number(match[2]) > 65535) {
      throw new UsageError(`--analysis-hosts ${entry}: expected HOST:PORT`);
    }
    return entry.toLowerCase();
  });
}

/** A duration option in milliseconds, or undefined when not given. */
function optionalDuration(args: ParsedArgs, flag: string): number | undefined {
  const text = stringOption(args, flag);
  return text === undefined ? undefined : parseDuration(text, flag);
}

/**
 * A replica's name in the Lease when neither `--lease-identity` nor POD_NAME gives one. The host
 * name needs --allow-sys, which the image does not grant: say what to pass instead.
 */
function hostIdentity(): string {
  try {
    return `${Deno.hostname()}-${Deno.pid}`;
  } catch (err) {
    if (!(err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied)) {
      throw err;
    }
    throw new UsageError(
      "--lease needs this replica's name: pass --lease-identity, set POD_NAME (the manifests " +
        "set it from the pod's name), or grant --allow-sys=hostname for the host name",
    );
  }
}

/** `--lease NAMESPACE/NAME` and its identity and duration, or undefined without it. */
function leaseFromArgs(args: ParsedArgs): ControllerOptions["lease"] {
  const lease = stringOption(args, "lease");
  const identity = stringOption(args, "lease-identity");
  const duration = stringOption(args, "lease-duration");
  if (lease === undefined) {
    if (identity !== undefined || duration !== undefined) {
      throw new UsageError("--lease-identity and --lease-duration go with --lease");
    }
    return undefined;
  }
  const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(lease);
  if (!match) throw new UsageError(`--lease ${lease}: expected NAMESPACE/NAME`);
  const durationMs = optionalDuration(args, "lease-duration");
  if (durationMs !== undefined && durationMs < 1000) {
    throw new UsageError("--lease-duration must be at least 1s");
  }
  return {
    namespace: match[1],
    name: match[3],
    identity: identity ?? Deno.env.get("POD_NAME") ?? hostIdentity(),
    times: durationMs === undefined ? undefined : leaseTimesFor(durationMs),
  };
}
