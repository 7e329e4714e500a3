/**
 * OpenYurt's OTA API over HTTP, with YurtHub's paths and answers: plain-text bodies and its
 * status codes (controller/ota-checks.ts). What each call does is the service's: the controller
 * serves every node (controller/ota.ts), the edge agent its own, from its cache (edge/ota.ts).
 */
import { Hono, type MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import { OtaError, type OtaService } from "../controller/ota-checks.ts";
import type { Logger } from "../lib/log.ts";

export type { OtaService };
import { errorBody } from "./errors.ts";
import { dnsName, rejectInvalid } from "./params.ts";

export interface OtaRouteDeps {
  ota: OtaService;
  /**
   * Checks the caller's bearer token; on the edge agent listening on loopback without a token,
   * `openOnLoopback` (as YurtHub's OTA routes are open there).
   */
  guard: MiddlewareHandler;
  logger: Logger;
}

const PodParams = z.object({ ns: dnsName.max(63), pod: dnsName });
const PodsQuery = z.object({ node: dnsName.optional() });
const UpgradeQuery = z.object({ whenConnected: z.enum(["true", "false"]).optional() });

/**
 * Every failure as YurtHub writes one: the status and a sentence, `text/plain`. zod's issues
 * are listed one a line, each with its path.
 */
function otaErrorHandler(logger: Logger) {
  return (err: Error, c: { text: (t: string, s: ContentfulStatusCode) => Response }) => {
    if (err instanceof OtaError) return c.text(err.message, err.status);
    const body = errorBody(err);
    const issues = (body.issues ?? []).map((i) =>
      `\n${i.path.join(".") || "(root)"}: ${i.message}`
    );
    (body.status >= 500 ? logger.error : logger.info)("OTA request failed", {
      status: body.status,
      error: err.message,
    });
    const text = body.status >= 500 ? "internal error" : `${body.message}${issues.join("")}`;
    return c.text(text, body.status as ContentfulStatusCode);
  };
}

/** Adds `GET /pods` (and its OpenYurt alias) and the upgrade and imagepull routes to `app`. */
export function registerOtaRoutes(app: Hono, { ota, guard, logger }: OtaRouteDeps): void {
  const routes = new Hono();
  routes.onError(otaErrorHandler(logger));

  const listPods = zValidator("query", PodsQuery, rejectInvalid);
  for (const path of ["/pods", "/openyurt.io/v1/pods"]) {
    routes.get(path, guard, listPods, async (c) => {
      const { list, ageSeconds } = await ota.pods(c.req.valid("query").node);
      // HTTP's Age: how long ago the answer was last known to match the API server.
      if (ageSeconds !== undefined) c.header("Age", String(Math.floor(ageSeconds)));
      return c.json(list);
    });
  }

  const podParams = zValidator("param", PodParams, rejectInvalid);
  routes.post(
    "/openyurt.io/v1/namespaces/:ns/pods/:pod/upgrade",
    guard,
    podParams,
    zValidator("query", UpgradeQuery, rejectInvalid),
    async (c) => {
      const { ns, pod } = c.req.valid("param");
      const whenConnected = c.req.valid("query").whenConnected === "true";
      const { status, text } = await ota.upgrade(ns, pod, { whenConnected });
      return c.text(text, status);
    },
  );

  // YurtHub marks PodImageReady False and leaves the pull to yurt-manager's image pre-pull
  // controller, which runs a Job on the node. edgeroll has no such puller: saying so is
  // better than a mark nothing would ever clear, which would then block the upgrade.
  routes.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/imagepull", guard, podParams, (c) => {
    const { ns, pod } = c.req.valid("param");
    return c.text(
      `Image pre-pull is not supported by edgeroll (pod ${ns}/${pod}): the new pod pulls its image when the upgrade starts`,
      501,
    );
  });
  app.route("/", routes);
}
