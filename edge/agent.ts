/**
 * The edge agent: OpenYurt's OTA API for one node (YurtHub serves it on 127.0.0.1:10267), from a
 * cache of the node's pods that outlives the link to the cloud, and `/healthz`. Runtime-neutral,
 * like everything it imports: web APIs and `node:` built-ins only, and no
 * @kubernetes/client-node (kube/lean-client.ts), so the Node single executable runs it as
 * `deno run` does and stays small (ADR 0019).
 */
import { mkdirSync } from "node:fs";
import { Hono, type MiddlewareHandler } from "hono";
import { createLogger, type Logger } from "../lib/log.ts";
import { LeanKubeClient } from "../kube/lean-client.ts";
import type { LeanConnection } from "../kube/lean-config.ts";
import { openOnLoopback, requireBearer, staticTokenAuthenticator } from "../routes/auth.ts";
import { errorHandler, notFound } from "../routes/errors.ts";
import { type OtaService, registerOtaRoutes } from "../routes/ota.ts";
import { EdgeOta } from "./ota.ts";
import { NodePodCache } from "./pod-cache.ts";
import { UpgradeJournal } from "./upgrade-journal.ts";
import { serveFetch } from "./http-server.ts";

export const defaultEdgePort = 10267;
export const defaultStateDir = "/var/lib/edgeroll";

export interface EdgeAppDeps {
  ota: OtaService;
  /** The node whose pods this agent lists and upgrades. */
  node: string;
  /** Whether the pod watch is up: `/healthz` says so. */
  connected: () => boolean;
  guard: MiddlewareHandler;
  logger: Logger;
}

export function createEdgeApp(deps: EdgeAppDeps): Hono {
  const app = new Hono();
  app.onError(errorHandler(deps.logger));
  app.notFound(notFound(app));
  app.get("/healthz", (c) => c.json({ ok: true, node: deps.node, connected: deps.connected() }));
  registerOtaRoutes(app, { ota: deps.ota, guard: deps.guard, logger: deps.logger });
  return app;
}

/** 127.0.0.0/8, ::1 and `localhost`: reachable from the node itself only. */
export function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "::1" || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/**
 * The guard of the OTA routes: the token when one is given; none on loopback unless
 * `requireToken`; anywhere else a token is required, and its absence stops the start.
 */
export function otaGuard(
  options: { hostname: string; token?: string; requireToken?: boolean },
): MiddlewareHandler {
  if (options.token !== undefined) return requireBearer(staticTokenAuthenticator(options.token));
  if (options.requireToken) {
    throw new Error("a token is required (--require-token): give --token-file or EDGEROLL_TOKEN");
  }
  if (!isLoopback(options.hostname)) {
    throw new Error(
      `listening on ${options.hostname}, beyond loopback, needs a token: give --token-file or EDGEROLL_TOKEN`,
    );
  }
  return openOnLoopback;
}

export interface EdgeAgentOptions {
  connection: LeanConnection;
  node: string;
  /** The bearer token callers send; see `otaGuard` for when one is needed. */
  token?: string;
  requireToken?: boolean;
  /** Where the pod cache and the upgrade journal are kept; created if missing. */
  stateDir: string;
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
  const { node, stateDir } = options;
  const hostname = options.hostname ?? "127.0.0.1";
  const logger = options.logger ?? createLogger({}, { node });
  const guard = otaGuard({ hostname, token: options.token, requireToken: options.requireToken });
  try {
    mkdirSync(stateDir, { recursive: true });
  } catch (err) {
    throw new Error(`cannot create the state directory ${stateDir}: ${(err as Error).message}`);
  }
  const api = new LeanKubeClient(options.connection);
  const journal = new UpgradeJournal(stateDir, node);
  journal.load();
  const cache = new NodePodCache({ api, node, stateDir, logger });
  const ota = new EdgeOta({ api, cache, journal, node, logger });
  cache.start();
  const app = createEdgeApp({ ota, node, connected: () => cache.connected, guard, logger });
  const server = await serveFetch(app.fetch, { hostname, port: options.port, logger }).catch(
    async (err) => {
      await cache.stop();
      api.close();
      throw err;
    },
  );
  logger.info("edge agent listening", {
    url: server.url,
    stateDir,
    token: guard === openOnLoopback ? "none (loopback)" : "required",
  });
  return {
    url: server.url,
    stop: async () => {
      await server.close();
      ota.close();
      await cache.stop();
      api.close();
    },
  };
}
