/**
 * OpenYurt's OTA API over HTTP (YurtHub's paths and answers); what each call does is
 * `controller/ota.ts`. Served by the controller's app and by the edge agent's.
 */
import type { Hono, MiddlewareHandler } from "hono";
import { zValidator } from "@hono/zod-validator";
import { z } from "zod";
import type { Ota } from "../controller/ota.ts";
import { HttpError } from "./errors.ts";
import { dnsName, rejectInvalid } from "./params.ts";

export interface OtaRouteDeps {
  ota: Ota;
  /** Checks the bearer token: every OTA route reads pod specs or deletes pods. */
  guard: MiddlewareHandler;
}

const PodParams = z.object({ ns: dnsName.max(63), pod: dnsName });
const PodsQuery = z.object({ node: dnsName.optional() });

/** Adds `GET /pods` (and its OpenYurt alias) and the upgrade and imagepull routes to `app`. */
export function registerOtaRoutes(app: Hono, { ota, guard }: OtaRouteDeps): void {
  const listPods = zValidator("query", PodsQuery, rejectInvalid);
  for (const path of ["/pods", "/openyurt.io/v1/pods"]) {
    app.get(path, guard, listPods, async (c) => c.json(await ota.pods(c.req.valid("query").node)));
  }

  const podParams = zValidator("param", PodParams, rejectInvalid);
  app.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/upgrade", guard, podParams, async (c) => {
    const { ns, pod } = c.req.valid("param");
    await ota.upgrade(ns, pod);
    return c.text(`Start updating pod ${ns}/${pod}`);
  });

  // YurtHub marks PodImageReady False and leaves the pull to yurt-manager's image pre-pull
  // controller, which runs a Job on the node. edgeroll has no such puller: saying so is
  // better than a mark nothing would ever clear, which would then block the upgrade.
  app.post("/openyurt.io/v1/namespaces/:ns/pods/:pod/imagepull", guard, podParams, (c) => {
    const { ns, pod } = c.req.valid("param");
    throw new HttpError(
      501,
      "NotImplemented",
      `image pre-pull is not supported by edgeroll (pod ${ns}/${pod}): the new pod pulls its image when the upgrade starts`,
    );
  });
}
