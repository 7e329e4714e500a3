/**
 * OpenYurt's OTA API over HTTP, with YurtHub's paths and answers: plain-text bodies and its
 * status codes (controller/ota-checks.ts). What each call does is the service's: the controller
 * serves every node (controller/ota.ts), the edge agent its own, from its cache (edge/ota.ts).
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { OtaError, type OtaService } from "../controller/ota-checks.ts";
import type { Logger } from "../lib/log.ts";

export type { OtaService };
import { errorBody } from "./errors.ts";
import { dns1123Label, dns1123Subdomain, nameIssue, type NameRule } from "./names.ts";

export interface OtaRouteDeps {
  ota: OtaService;
  /**
   * Checks the caller's bearer token; on the edge agent listening on loopback without a token,
   * `openOnLoopback` (as YurtHub's OTA routes are open there).
   */
  guard: MiddlewareHandler;
  logger: Logger;
}

/**
 * The checks of what a caller sends, each a name and its rule; zod-free (routes/names.ts). A
 * failure is a 400 listing each bad field on a line of its own.
 */
function checked(
  where: "param" | "query",
  fields: [name: string, value: string | undefined, rule: NameRule | readonly string[]][],
): void {
  const issues = fields.flatMap(([name, value, rule]) => {
    if (value === undefined) return [];
    const issue = Array.isArray(rule)
      ? rule.includes(value) ? undefined : `must be one of ${rule.join(", ")}`
      : nameIssue(value, rule as NameRule);
    return issue ? [`${name}: ${issue}`] : [];
  });
  if (issues.length > 0) throw new OtaError(400, [`invalid ${where}`, ...issues].join("\n"));
}

/** The pod a route names: `ns` a DNS-1123 label, `pod` a DNS-1123 subdomain. */
function podOf(c: Context): { ns: string; pod: string } {
  const ns = c.req.param("ns") ?? "";
  const pod = c.req.param("pod") ?? "";
  checked("param", [["ns", ns, dns1123Label], ["pod", pod, dns1123Subdomain]]);
  return { ns, pod };
}

/**
 * Every failure as YurtHub writes one: the status and a sentence, `text/plain`. Besides the
 * services' OtaErrors, the guard's 401 and 429 arrive here; anything else is ours to log.
 */
function otaErrorHandler(logger: Logger) {
  return (err: Error, c: { text: (t: string, s: ContentfulStatusCode) => Response }) => {
    if (err instanceof OtaError) return c.text(err.message, err.status);
    const body = errorBody(err);
    (body.status >= 500 ? logger.error : logger.info)("OTA request failed", {
      status: body.status,
      error: err.message,
    });
    const text = body.status >= 500 ? "internal error" : body.message;
    return c.text(text, body.status as ContentfulStatusCode);
  };
}

/** Adds `GET /pods` (and its OpenYurt alias) and the upgrade and imagepull routes to `app`. */
export function registerOtaRoutes(app: Hono, { ota, guard, logger }: OtaRouteDeps): void {
  const routes = new Hono();
  routes.onError(otaErrorHandler(logger));

  for (const path of ["/pods", "/openyurt.io/v1/pods"]) {
    routes.get(path, guard, async (c) => {
      const node = c.req.query("node");
      checked("query", [["node", node, dns1123Subdomain]]);
      const { list, ageSeconds } = await ota.pods(node);
      // HTTP's Age: how long ago the answer was last known to match the API server.
      if (ageSeconds !== undefined) c.header("Age", String(Math.floor(ageSeconds)));
      return c.json(list);
    });
  }

  routes.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/upgrade", guard, async (c) => {
    const { ns, pod } = podOf(c);
    const asked = c.req.query("whenConnected");
    checked("query", [["whenConnected", asked, ["true", "false"]]]);
    const { status, text } = await ota.upgrade(ns, pod, { whenConnected: asked === "true" });
    return c.text(text, status);
  });

  // YurtHub marks PodImageReady False; the set's reconcile then pulls on the node (ADR 0034).
  routes.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/imagepull", guard, async (c) => {
    const { ns, pod } = podOf(c);
    const { status, text } = await ota.imagePull(ns, pod);
    return c.text(text, status);
  });
  app.route("/", routes);
}
