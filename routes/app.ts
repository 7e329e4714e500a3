/**
 * The controller's HTTP app. Every dependency comes in (kube client, planner, clock,
 * logger, auth), so tests call `app.request()` with no server and no cluster of their own.
 */
import { Hono } from "hono";
import { zValidator } from "@hono/zod-validator";
import { type ControllerDeps, createController } from "../controller/controller.ts";
import { type Authenticator, requireBearer } from "./auth.ts";
import { errorHandler, HttpError, notFound } from "./errors.ts";
import { parseCloudEvents, routeEvent } from "./events.ts";
import { defaultLimits, limitRequests, type RequestLimits } from "./limits.ts";
import { registerOtaRoutes } from "./ota.ts";
import { rejectInvalid } from "./params.ts";
import { controllerOpenApi, ReconcileParams, ReconcileQuery, TickQuery } from "./controller-api.ts";
import { ConversionReview, convertReview } from "../api/kruise.ts";

export interface AppDeps extends ControllerDeps {
  auth: Authenticator;
  /** What one request may ask (`defaultLimits` where absent). */
  limits?: Partial<RequestLimits>;
}

/** The controller's HTTP app: each route maps a request to a call of `createController`'s. */
export function createApp(deps: AppDeps) {
  const controller = createController(deps);
  const { reconcile, tick, enqueue, metrics, ota } = controller;
  const logger = deps.logger;
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
  let openApi: string | undefined;
  app.get("/openapi.json", (c) => {
    openApi ??= JSON.stringify(controllerOpenApi({ kruise: Boolean(deps.kube.kruise) }));
    return c.body(openApi, 200, { "Content-Type": "application/json" });
  });
  app.get(
    "/metrics",
    async (c) => c.body(await metrics.text(), 200, { "Content-Type": metrics.contentType }),
  );

  // The API server's conversion webhook call carries no token of ours (ADR 0027): converting
  // objects the caller sent reads and changes nothing here, so it needs none.
  if (deps.kube.kruise) {
    app.post(
      "/convert",
      zValidator("json", ConversionReview, rejectInvalid),
      (c) => c.json(convertReview(c.req.valid("json"))),
    );
  }

  const guarded = requireBearer(deps.auth);
  registerOtaRoutes(app, { ota, guard: guarded, logger });
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
    const routed = events.map((event) => routeEvent(event, controller.reportedNodes));
    for (const { keys } of routed) keys.forEach(enqueue);
    return c.json({ accepted: routed.some((r) => !r.ignored), events: routed }, 202);
  });

  app.post("/tick", guarded, zValidator("query", TickQuery, rejectInvalid), async (c) => {
    return c.json(await tick(c.req.valid("query").full));
  });

  return { ...controller, app };
}

export type ControllerApp = ReturnType<typeof createApp>;
