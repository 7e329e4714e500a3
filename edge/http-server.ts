/**
 * A fetch handler served by `node:http`, which Deno and Node both provide: the edge agent runs
 * this same server under `deno run` and in its Node single executable.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../lib/log.ts";

export interface FetchServer {
  /** `http://host:port`, the port the system picked when 0 was asked. */
  url: string;
  close(): Promise<void>;
}

type FetchHandler = (request: Request) => Response | Promise<Response>;

/**
 * The request without its body: every route the agent serves is a GET or a bodiless POST, so
 * a body is never read, whatever its size.
 */
function toRequest(req: IncomingMessage, origin: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      headers.append(name, one);
    }
  }
  return new Request(new URL(req.url ?? "/", origin), { method: req.method, headers });
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(body);
}

/** An answer in the app's error shape (routes/errors.ts), for what never reached the app. */
function sendError(res: ServerResponse, status: number, reason: string, message: string): void {
  if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { status, reason, message } }));
}

export function serveFetch(
  handler: FetchHandler,
  options: { hostname: string; port: number; logger: Logger },
): Promise<FetchServer> {
  let origin = "";
  const server = createServer((req, res) => {
    let request: Request;
    try {
      request = toRequest(req, origin);
    } catch (err) {
      // A request target that is no URL (`//`, `http://[`): the caller's mistake, said and logged.
      options.logger.info("request refused", {
        target: req.url,
        status: 400,
        error: (err as Error).message,
      });
      sendError(res, 400, "BadRequest", `not a request target: ${req.url}`);
      return;
    }
    Promise.resolve()
      .then(() => handler(request))
      .then((response) => send(res, response))
      .catch((err) => {
        options.logger.error("request failed", {
          target: req.url,
          status: 500,
          error: err instanceof Error ? err.message : String(err),
        });
        sendError(res, 500, "InternalError", "internal error");
      });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      const { address, port } = server.address() as AddressInfo;
      origin = `http://${address.includes(":") ? `[${address}]` : address}:${port}`;
      resolve({
        url: origin,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Idle keep-alive connections would hold close() open.
            server.closeAllConnections?.();
          }),
      });
    });
  });
}
