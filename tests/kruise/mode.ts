/**
 * edgeroll in Kruise compatibility mode (ADR 0027) against a cluster, as the e2e scenario and
 * Kruise's own specs run it: serve and relay with --kruise, serving HTTPS with a certificate of
 * their own (for 127.0.0.1, its own CA), and the generated CRD for Kruise's DaemonSet installed
 * with its conversion webhook at the (first) controller and that CA as `caBundle`, as the API
 * server requires. The CRD is deleted at the end: its webhook goes with the controller.
 * `options` are `withControllers`' (the relay by default), `--kruise` added to both commands;
 * `kubeconfig` installs the CRD, and the controllers use it too unless `controllersKubeconfigPath`.
 */
import { kruiseDaemonSetCrd } from "../../api/crd.ts";
import { writePki } from "../../cluster/certs.ts";
import { kubectl } from "../../cluster/kubectl.ts";
import { type ControllerProcesses, withControllers } from "../processes.ts";

const crd = "customresourcedefinition/daemonsets.apps.kruise.io";

export async function withKruiseMode(
  kubeconfig: string,
  options: Omit<Parameters<typeof withControllers>[1], "tls"> & {
    controllersKubeconfigPath?: string;
  },
  body: (controllers: ControllerProcesses) => Promise<void>,
): Promise<void> {
  const tlsDir = await Deno.makeTempDir({ prefix: "edgeroll-kruise-tls-" });
  try {
    const pki = await writePki(tlsDir);
    const tls = {
      certFile: pki.servingCertPath,
      keyFile: pki.servingKeyPath,
      caFile: pki.caCertPath,
    };
    const serveArgs = ["--kruise", ...options.serveArgs ?? []];
    const relayArgs = ["--kruise", ...options.relayArgs ?? []];
    const relay = options.relay ?? true;
    await withControllers(
      options.controllersKubeconfigPath ?? kubeconfig,
      { ...options, serveArgs, relayArgs, relay, tls },
      async (e) => {
        const caBundle = btoa(await Deno.readTextFile(tls.caFile)); // PEM is ASCII
        // create, not apply: a CRD this large would overflow apply's last-applied annotation.
        await kubectl(
          kubeconfig,
          ["create", "-f", "-"],
          JSON.stringify(kruiseDaemonSetCrd({ url: e.urls[0] }, caBundle)),
        );
        try {
          await kubectl(kubeconfig, ["wait", "--for=condition=Established", "--timeout=60s", crd]);
          await body(e);
        } finally {
          await kubectl(kubeconfig, ["delete", "--ignore-not-found", "--wait=false", crd]);
        }
      },
    ).catch((err) => {
      if (!/^the process serving .* exited$/.test(err?.message)) throw err;
      throw new Error(
        `edgeroll serve ${serveArgs.join(" ")} exited before it answered /readyz ` +
          "(its own words are above, on stderr)",
        { cause: err },
      );
    });
  } finally {
    await Deno.remove(tlsDir, { recursive: true });
  }
}
