/**
 * The controller's listener: Deno's HTTP server, over plain HTTP or over TLS with a certificate
 * and key read from files (a `kubernetes.io/tls` Secret's volume). The files are read again every
 * `reloadMs`; when they change, a server with the new pair takes the same port and the old one
 * finishes its requests in flight, so a renewed certificate (cert-manager, a rotated Secret) is
 * served without a restart. A pair that does not load is logged and the served one kept.
 */
import type { Logger } from "../lib/log.ts";

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface ListenOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  tls?: TlsFiles;
  /** How often the TLS files are read again (ms; default 30 s). */
  reloadMs?: number;
  logger: Logger;
}

export interface Listener {
  /** `http(s)://host:port`, with 127.0.0.1 for a wildcard address. */
  url: string;
  close(): Promise<void>;
}

type Handler = (request: Request) => Response | Promise<Response>;

interface Pair {
  cert: string;
  key: string;
}

function readPair(files: TlsFiles): Pair {
  return { cert: Deno.readTextFileSync(files.certFile), key: Deno.readTextFileSync(files.keyFile) };
}

async function fingerprint(cert: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(cert));
  return Array.from(new Uint8Array(digest).slice(0, 8), (b) => b.toString(16).padStart(2, "0"))
    .join("");
}

const serve = (
  handler: Handler,
  hostname: string,
  port: number,
  pair?: Pair,
): Deno.HttpServer<Deno.NetAddr> =>
  Deno.serve({ hostname, port, onListen: () => {}, ...pair }, handler);

/** Binds `port` again once the server that held it has let it go (a few ms). */
async function rebind(
  bind: () => Deno.HttpServer<Deno.NetAddr>,
): Promise<Deno.HttpServer<Deno.NetAddr>> {
  for (let attempt = 0;; attempt++) {
    try {
      return bind();
    } catch (err) {
      if (!(err instanceof Deno.errors.AddrInUse) || attempt >= 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

export function listen(handler: Handler, options: ListenOptions): Listener {
  const { hostname, tls, logger } = options;
  let pair = tls && readPair(tls);
  let server = serve(handler, hostname, options.port, pair);
  const port = server.addr.port;
  const host = server.addr.hostname === "0.0.0.0" ? "127.0.0.1" : server.addr.hostname;
  const url = `${tls ? "https" : "http"}://${host}:${port}`;
  const retired: Promise<void>[] = [];

  let reloading: Promise<void> = Promise.resolve();
  const reload = async (files: TlsFiles) => {
    let next: Pair;
    try {
      next = readPair(files);
      if (next.cert === pair?.cert && next.key === pair.key) return;
      // Loaded on a free port first: a bad pair must not cost the served one.
      await serve(handler, "127.0.0.1", 0, next).shutdown();
    } catch (err) {
      logger.error("TLS certificate not reloaded; serving the previous one", {
        certFile: files.certFile,
        error: (err as Error).message,
      });
      return;
    }
    retired.push(server.shutdown());
    server = await rebind(() => serve(handler, hostname, port, next));
    pair = next;
    logger.info("TLS certificate reloaded", { sha256Prefix: await fingerprint(next.cert) });
  };
  const timer = tls === undefined ? undefined : setInterval(() => {
    reloading = reloading.then(() => reload(tls));
  }, options.reloadMs ?? 30_000);

  return {
    url,
    async close() {
      if (timer !== undefined) clearInterval(timer);
      await reloading;
      await Promise.all([server.shutdown(), ...retired]);
    },
  };
}
