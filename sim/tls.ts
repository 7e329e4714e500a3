/**
 * A self-signed serving certificate for 127.0.0.1, made with openssl (as cluster/ makes its
 * PKI). Only the node identities' listener serves TLS: kubectl sends a bearer token over HTTPS
 * only, and a node's credentials mean nothing if they are never sent (ADR 0008).
 */
export interface ServingCertificate {
  /** PEM; also the CA a client trusts, the certificate being its own issuer. */
  cert: string;
  key: string;
}

export async function selfSignedCertificate(): Promise<ServingCertificate> {
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-sim-tls-" });
  try {
    const { code, stderr } = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
        "-days",
        "7",
        "-subj",
        "/CN=edgeroll-sim",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      throw new Error(`openssl req failed: ${new TextDecoder().decode(stderr).trim()}`);
    }
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
