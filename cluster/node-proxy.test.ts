import { assertEquals } from "@std/assert";
import { startNodeProxy } from "./node-proxy.ts";

/** A loopback server that answers each connection's first chunk with `reply`, then closes. */
function replier(reply: Uint8Array) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    for await (const conn of listener) {
      const buffer = new Uint8Array(1024);
      await conn.read(buffer);
      await conn.write(reply);
      conn.close();
    }
  })().catch(() => {/* the listener closed */});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close(), served };
}

Deno.test("the forwarder counts its connections and the bytes its clients read", async () => {
  const reply = new Uint8Array(70_000).fill(7);
  const server = replier(reply);
  const proxy = startNodeProxy({ hostname: "127.0.0.1", port: server.port });
  try {
    for (let i = 0; i < 2; i++) {
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: Number(new URL(proxy.url).port),
      });
      await conn.write(new TextEncoder().encode("hello"));
      let read = 0;
      for await (const chunk of conn.readable) read += chunk.byteLength;
      assertEquals(read, reply.byteLength);
    }
    assertEquals(proxy.accepted, 2);
    assertEquals(proxy.bytesRead, 2 * reply.byteLength);
  } finally {
    await proxy.close();
    server.close();
    await server.served;
  }
});
