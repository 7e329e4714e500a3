/** For tests: a server of our own on 127.0.0.1 (webhooks the API server calls), on a free port. */

export interface LoopbackServer {
  /** `http://127.0.0.1:PORT`, or https when it was given a certificate. */
  url: string;
  /** Stops it and waits until it has. */
  stop(): Promise<void>;
}

/** Serves `handler` on loopback, over https with `tls`; answers once it listens. */
export async function serveOnLoopback(
  handler: (req: Request) => Response | Promise<Response>,
  tls?: { cert: string; key: string },
): Promise<LoopbackServer> {
  const abort = new AbortController();
  const { promise, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...tls,
    signal: abort.signal,
    onListen: (addr) => resolve(addr as Deno.NetAddr),
  }, handler);
  const { port } = await promise;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    async stop() {
      abort.abort();
      await server.finished;
    },
  };
}
