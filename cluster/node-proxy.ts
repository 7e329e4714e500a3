/**
 * A node's own way to the API server: a loopback TCP forwarder per node that its credentials'
 * kubeconfig points at (TLS passes through untouched). Cutting the node's link closes the
 * forwarder and every connection on it, so what runs on the node with those credentials (the
 * edge agent) loses the API server with the node, as on a real edge; healing listens again on
 * the same port. kwok's Lease takeover (ADR 0013) cuts only the node's heartbeats.
 */

export interface NodeProxy {
  /** Where the node's kubeconfig points: `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** Connections accepted so far: what a client that reuses its connections keeps small. */
  readonly accepted: number;
  /** Bytes forwarded from the API server to its clients so far (TLS records: what they read). */
  readonly bytesRead: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

/** Forwards `127.0.0.1:<port>` to `target` (`host:port`) until cut or closed. */
export function startNodeProxy(target: { hostname: string; port: number }): NodeProxy {
  const connections = new Set<Deno.Conn>();
  const pumps = new Set<Promise<void>>();
  let listener: Deno.TcpListener | undefined;
  let port = 0;
  let accepted = 0;
  let bytesRead = 0;
  const countingRead = () =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytesRead += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });

  const forward = async (inbound: Deno.TcpConn) => {
    let outbound: Deno.TcpConn | undefined;
    try {
      outbound = await Deno.connect(target);
      // Each chunk goes on at once, as the client sent it: with Nagle's algorithm a request's
      // body written after its headers waited for the API server's delayed ACK (40 ms).
      outbound.setNoDelay(true);
      inbound.setNoDelay(true);
      connections.add(outbound);
      // Either side ending ends both; errors are the cut or a peer's close.
      await Promise.race([
        inbound.readable.pipeTo(outbound.writable),
        outbound.readable.pipeThrough(countingRead()).pipeTo(inbound.writable),
      ]);
    } catch {
      /* a connection cut by cut() or closed by a peer */
    } finally {
      for (const conn of [inbound, outbound]) {
        if (!conn) continue;
        connections.delete(conn);
        try {
          conn.close();
        } catch { /* already closed */ }
      }
    }
  };

  const listen = () => {
    listener = Deno.listen({ hostname: "127.0.0.1", port });
    port = (listener.addr as Deno.NetAddr).port;
    const accepting = listener;
    const accept = (async () => {
      try {
        for await (const conn of accepting) {
          accepted++;
          connections.add(conn);
          const pump = forward(conn);
          pumps.add(pump);
          pump.finally(() => pumps.delete(pump));
        }
      } catch { /* the listener was closed by cut() */ }
    })();
    pumps.add(accept);
    accept.finally(() => pumps.delete(accept));
  };

  const cut = () => {
    try {
      listener?.close();
    } catch { /* already closed */ }
    listener = undefined;
    for (const conn of [...connections]) {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
    connections.clear();
  };

  listen();
  return {
    url: `https://127.0.0.1:${port}`,
    get accepted() {
      return accepted;
    },
    get bytesRead() {
      return bytesRead;
    },
    cut,
    heal() {
      if (!listener) listen();
    },
    async close() {
      cut();
      await Promise.allSettled([...pumps]);
    },
  };
}
