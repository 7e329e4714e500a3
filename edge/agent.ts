/**
 * The edge agent: OpenYurt's OTA API for one node (YurtHub serves it on 127.0.0.1:10267), and
 * `/healthz`. Runtime-neutral, like everything it imports: web APIs and `node:` built-ins only,
 * so the Node single executable runs it as `deno run` does.
 */
import { Hono } from "hono";
import type * as k8s from "@kubernetes/client-node";
import { createLogger, type Logger } from "../lib/log.ts";
import { clientNodeApi } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { type Authenticator, requireBearer } from "../routes/auth.ts";
import { errorHandler, notFound } from "../routes/errors.ts";
import { registerOtaRoutes } from "../routes/ota.ts";
import { Ota } from "../controller/ota.ts";
import { serveFetch } from "./http-server.ts";

export const defaultEdgePort = 10267;

export interface EdgeAppDeps {
  kube: KubeClient;
  /** The node whose pods this agent lists and upgrades. */
  node: string;
  auth: Authenticator;
  logger: Logger;
  deadlineMs?: number;
}

export function createEdgeApp(deps: EdgeAppDeps): Hono {
  const app = new Hono();
  app.onError(errorHandler(deps.logger));
  app.notFound(notFound(app));
  app.get("/healthz", (c) => c.json({ ok: true, node: deps.node }));
  const { kube, logger, node, deadlineMs } = deps;
  registerOtaRoutes(app, {
    ota: new Ota({ kube, logger, node, deadlineMs }),
    guard: requireBearer(deps.auth),
  });
  return app;
}

export interface EdgeAgentOptions {
  kubeConfig: k8s.KubeConfig;
  node: string;
  auth: Authenticator;
  /** Default 127.0.0.1: the node's owner calls from the node itself. */
  hostname?: string;
  /** 0 picks a free port. */
  port: number;
  logger?: Logger;
}

export interface RunningEdgeAgent {
  url: string;
  stop(): Promise<void>;
}

export async function startEdgeAgent(options: EdgeAgentOptions): Promise<RunningEdgeAgent> {
  const logger = options.logger ?? createLogger({}, { node: options.node });
  const kube = new KubeClient(clientNodeApi(options.kubeConfig), { component: "edgeroll-edge" });
  const app = createEdgeApp({ kube, node: options.node, auth: options.auth, logger });
  const server = await serveFetch(app.fetch, {
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port,
    logger,
  });
  logger.info("edge agent listening", { url: server.url });
  return { url: server.url, stop: () => server.close() };
}
