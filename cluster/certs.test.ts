import { assert, assertStringIncludes } from "@std/assert";
import { clientSubjects, writePki } from "./certs.ts";

async function openssl(...args: string[]): Promise<string> {
  const { code, stdout, stderr } = await new Deno.Command("openssl", { args }).output();
  const text = new TextDecoder().decode(code === 0 ? stdout : stderr);
  assert(code === 0, `openssl ${args.join(" ")}: ${text}`);
  return text;
}

Deno.test("the PKI: every certificate chains to the CA, with the subjects RBAC expects", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pki = await writePki(dir);
    const serving = await openssl("x509", "-in", pki.servingCertPath, "-noout", "-text");
    assertStringIncludes(serving, "IP Address:127.0.0.1");
    assertStringIncludes(serving, "TLS Web Server Authentication");
    for (const [name, subject] of Object.entries(clientSubjects)) {
      const { certPath } = pki.clients[name as keyof typeof clientSubjects];
      assertStringIncludes(await openssl("verify", "-CAfile", pki.caCertPath, certPath), "OK");
      const printed = await openssl(
        "x509",
        "-in",
        certPath,
        "-noout",
        "-subject",
        "-nameopt",
        "compat",
      );
      assertStringIncludes(printed, subject);
    }
    assertStringIncludes(
      await openssl("verify", "-CAfile", pki.caCertPath, pki.servingCertPath),
      "OK",
    );
    assertStringIncludes(
      await Deno.readTextFile(pki.serviceAccountPublicKeyPath),
      "BEGIN PUBLIC KEY",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
