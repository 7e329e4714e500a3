import { assertEquals, assertRejects } from "@std/assert";
import { writePki } from "../cluster/certs.ts";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { listen } from "./listener.ts";

/** Two serving pairs for 127.0.0.1, each from its own CA. */
async function twoPairs(dir: string) {
  const [one, two] = await Promise.all([writePki(`${dir}/one`), writePki(`${dir}/two`)]);
  return [one, two].map((pki) => ({
    cert: pki.servingCertPath,
    key: pki.servingKeyPath,
    ca: Deno.readTextFileSync(pki.caCertPath),
  }));
}

Deno.test("listen over TLS: a renewed certificate is served without a restart; a broken one is not", async () => {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-listener-" });
  const logs = memoryLogger();
  const [one, two] = await twoPairs(dir);
  const certFile = `${dir}/tls.crt`;
  const keyFile = `${dir}/tls.key`;
  await Deno.copyFile(one.cert, certFile);
  await Deno.copyFile(one.key, keyFile);
  const listener = listen(() => new Response("ok"), {
    hostname: "127.0.0.1",
    port: 0,
    tls: { certFile, keyFile },
    reloadMs: 25,
    logger: logs,
  });
  // A new connection each time: a pooled one keeps the certificate it was opened with, and
  // what is asked here is what a new handshake gets.
  const get = async ({ ca }: { ca: string }) => {
    const client = Deno.createHttpClient({ caCerts: [ca] });
    try {
      return await (await fetch(`${listener.url}/healthz`, { client })).text();
    } finally {
      client.close();
    }
  };
  try {
    assertEquals(listener.url.startsWith("https://127.0.0.1:"), true);
    assertEquals(await get(one), "ok");
    await assertRejects(() => get(two));

    await Deno.copyFile(two.cert, certFile);
    await Deno.copyFile(two.key, keyFile);
    await eventually(
      "the renewed certificate served",
      () => get(two).then(() => true, () => false),
    );
    await assertRejects(() => get(one));
    assertEquals(logs.lines.some((l) => l.msg === "TLS certificate reloaded"), true);

    // A key that does not load is refused; the served pair stays.
    await Deno.writeTextFile(keyFile, "not a key");
    await eventually(
      "the broken key refused",
      () =>
        logs.lines.some((l) => l.msg === "TLS certificate not reloaded; serving the previous one"),
    );
    assertEquals(await get(two), "ok");
  } finally {
    await listener.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("listen over plain HTTP names a wildcard address as 127.0.0.1", async () => {
  const listener = listen(() => new Response("plain"), {
    hostname: "0.0.0.0",
    port: 0,
    logger: memoryLogger(),
  });
  try {
    assertEquals(listener.url.startsWith("http://127.0.0.1:"), true);
    assertEquals(await (await fetch(listener.url)).text(), "plain");
  } finally {
    await listener.close();
  }
});
