import { assertEquals, assertThrows } from "@std/assert";
import { stringify } from "yaml";
import { connectionFromKubeconfig, readSecret } from "./lean-config.ts";

/** A kubeconfig with one context, written to a temporary directory; `user` as given. */
function kubeconfig(dir: string, cluster: Record<string, unknown>, user: Record<string, unknown>) {
  const path = `${dir}/config`;
  Deno.writeTextFileSync(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster }],
      users: [{ name: "u", user }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return path;
}

Deno.test("lean kubeconfig: a kubelet's (files relative to the kubeconfig) and an operator's (inline data, token)", () => {
  const dir = Deno.makeTempDirSync();
  try {
    Deno.mkdirSync(`${dir}/pki`);
    Deno.writeTextFileSync(`${dir}/pki/client.pem`, "CERT AND KEY");
    const kubelet = connectionFromKubeconfig(kubeconfig(dir, {
      server: "https://10.0.0.1:6443/",
      "certificate-authority-data": btoa("CA"),
    }, { "client-certificate": "pki/client.pem", "client-key": `${dir}/pki/client.pem` }));
    assertEquals(kubelet.server, "https://10.0.0.1:6443");
    assertEquals(readSecret(kubelet.ca!), "CA");
    assertEquals(kubelet.cert, { file: `${dir}/pki/client.pem` });
    assertEquals(readSecret(kubelet.key!), "CERT AND KEY");
    assertEquals([kubelet.token, kubelet.insecureSkipTlsVerify], [undefined, false]);

    const operator = connectionFromKubeconfig(kubeconfig(dir, {
      server: "https://api.example:443",
      "insecure-skip-tls-verify": true,
      "tls-server-name": "kubernetes",
    }, { tokenFile: "token" }));
    assertEquals(operator.token, { file: `${dir}/token` });
    assertEquals([operator.insecureSkipTlsVerify, operator.tlsServerName], [true, "kubernetes"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("lean kubeconfig: what it cannot honour is refused by name, never skipped", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const server = { server: "https://10.0.0.1:6443" };
    assertThrows(
      () => connectionFromKubeconfig(kubeconfig(dir, server, { exec: { command: "aws" } })),
      Error,
      "uses exec, which the edge agent does not support",
    );
    assertThrows(
      () =>
        connectionFromKubeconfig(
          kubeconfig(dir, { ...server, "proxy-url": "http://proxy:3128" }, { token: "t" }),
        ),
      Error,
      "proxy-url is not supported",
    );
    assertThrows(
      () => connectionFromKubeconfig(kubeconfig(dir, { server: "ftp://x" }, { token: "t" })),
      Error,
      "has no http(s) server",
    );
    Deno.writeTextFileSync(`${dir}/empty`, "");
    assertThrows(() => connectionFromKubeconfig(`${dir}/empty`), Error, "not a kubeconfig");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
