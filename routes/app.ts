/**
 * The controller's HTTP app. Every dependency comes in (kube client, planner, clock,
 * logger, auth), so tests call `app.request()` with no server and no cluster of their own.
 */
import { Hono } from "hono";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import type { Logger } from "../lib/log.ts";
import type { KubeClient } from "../kube/client.ts";
import { setKey, type SetKind, setKinds, type SetRef } from "../kube/objects.ts";
import { type Authenticator, requireBearer } from "./auth.ts";
import { Coalescer } from "./coalescer.ts";
import { errorBody, errorHandler, HttpError, notFound } from "./errors.ts";
import {
  everySetKey,
  keysForChange,
  NodeChanges,
  parseCloudEvents,
  type ResourceData,
  routeEvent,
} from "./events.ts";
import { defaultLimits, limitRequests, type RequestLimits } from "./limits.ts";
import { Metrics } from "./metrics.ts";
import { registerOtaRoutes } from "./ota.ts";
import { dnsName, rejectInvalid } from "./params.ts";
import { createReconciler, type Planner } from "./reconciler.ts";
import { createTicker, listManagedSets } from "./tick.ts";

export interface AppDeps {
  kube: KubeClient;
  plan: Planner;
  logger: Logger;
  auth: Authenticator;
  clock?: () => number;
  metrics?: Metrics;
  /**
   * Wait before an event's reconcile (ms; default 0). Not needed to fold bursts: events for a
   * set that is being reconciled already fold into one run after it.
   */
  eventDelayMs?: number;
  /** Reconciles run at once by events and ticks. */
  concurrency?: number;
  /** Seconds between the tick's full resyncs. */
  resyncSeconds?: number;
  /** What one request may ask (`defaultLimits` where absent). */
  limits?: Partial<RequestLimits>;
}

const ReconcileParams = z.object({
  kind: z.enum(setKinds as [SetKind, ...SetKind[]]),
  namespace: dnsName.max(63),
  name: dnsName,
});
const flag = z.enum(["true", "false", ""]).optional().transform((v) => v === "true" || v === "");
const ReconcileQuery = z.object({ dryRun: flag });
const TickQuery = z.object({ full: flag });

export function parseSetKey(key: string): SetRef {
  const [kind, namespace, name] = key.split("/");
  return { kind: kind as SetKind, namespace, name };
}

export function createApp(deps: AppDeps) {
  const clock = deps.clock ?? Date.now;
  const metrics = deps.metrics ?? new Metrics();
  const logger = deps.logger;
  const reconcile = createReconciler({ kube: deps.kube, plan: deps.plan, clock, logger, metrics });
  const tick = createTicker({
    kube: deps.kube,
    reconcile,
    clock,
    resyncSeconds: deps.resyncSeconds ?? 600,
    concurrency: deps.concurrency,
  });
  const nodes = new NodeChanges();
  const coalescer: Coalescer = new Coalescer(async (key) => {
    if (key === everySetKey || key.endsWith("/*")) {
      const namespace = key === everySetKey ? undefined : key.slice(0, -2);
      for (const { ref } of (await listManagedSets(deps.kube)).sets) {
        if (namespace === undefined || ref.namespace === namespace) coalescer.add(setKey(ref));
      }
      return;
    }
    return (await reconcile(parseSetKey(key))).requeueAfter;
  }, {
    concurrency: deps.concurrency,
    delayMs: deps.eventDelayMs ?? 0,
    // A missing set or a refused request will not pass with time; an unreachable API may.
    retryable: (err) => errorBody(err).retryable === true || errorBody(err).status >= 500,
    logger,
  });

  // The controller's own caches report what they apply, as the relay's events would. Their
  // node fingerprints are kept apart from the events': a node change the relay reported first
  // (and whose reconcile found the cache behind) must still call a reconcile once the cache
  // has it.
  const cachedNodes = new NodeChanges();
  deps.kube.cache?.onChange(({ object, deleted }) => {
    for (const key of keysForChange(object as ResourceData, deleted, cachedNodes)) {
      coalescer.add(key);
    }
  });

  const app = new Hono();
  app.onError(errorHandler(logger));
  app.notFound(notFound(app));
  const limits = { ...defaultLimits, ...deps.limits };
  app.use(...limitRequests(limits));

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/readyz", async (c) => {
    try {
      const [kubernetes, served] = await Promise.all([
        deps.kube.ping(),
        deps.kube.servedSetKinds(),
      ]);
      return c.json({ ok: true, kubernetes, served });
    } catch (err) {
      // The open probe says only that; the reason, which names the API server, goes to the log.
      logger.warn("not ready: the Kubernetes API did not answer", {
        error: (err as Error).message,
      });
      throw new HttpError(503, "NotReady", "the Kubernetes API did not answer", {
        retryable: true,
      });
    }
  });
  app.get(
    "/metrics",
    async (c) => c.body(await metrics.text(), 200, { "Content-Type": metrics.contentType }),
  );

  const guarded = requireBearer(deps.auth);
  registerOtaRoutes(app, { kube: deps.kube, logger, guard: guarded });
  app.post(
    "/reconcile/:kind/:namespace/:name",
    guarded,
    zValidator("param", ReconcileParams, rejectInvalid),
    zValidator("query", ReconcileQuery, rejectInvalid),
    async (c) => {
      const ref = c.req.valid("param");
      const { dryRun } = c.req.valid("query");
      return c.json(await reconcile(ref, { dryRun }));
    },
  );

  app.post("/events", guarded, async (c) => {
    const events = parseCloudEvents(c.req.raw.headers, await c.req.text());
    if (events.length > limits.events) {
      throw new HttpError(
        413,
        "PayloadTooLarge",
        `a batch of ${events.length} events exceeds ${limits.events}`,
      );
    }
    const routed = events.map((event) => routeEvent(event, nodes));
    for (const { keys } of routed) keys.forEach((key) => coalescer.add(key));
    return c.json({ accepted: routed.some((r) => !r.ignored), events: routed }, 202);
  });

  app.post("/tick", guarded, zValidator("query", TickQuery, rejectInvalid), async (c) => {
    return c.json(await tick(c.req.valid("query").full));
  });

  return {
    app,
    reconcile,
    tick,
    coalescer,
    metrics,
    /** Stops queued work; what runs finishes. */
    close: () => coalescer.close(),
  };
}

export type ControllerApp = ReturnType<typeof createApp>;
