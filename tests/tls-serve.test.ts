/**
 * `serve --tls-cert --tls-key` as a user runs it: the controller and the relay as processes,
 * the relay trusting the controller's CA with `--ca-file`, a rollout driven by the relay's
 * events alone; a caller speaking plain HTTP gets no answer.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals, assertRejects } from "@std/assert";
import { edgerollCrds } from "../api/crd.ts";
import { writePki } from "../cluster/certs.ts";
import { freePort } from "../cluster/processes.ts";
import { startClusterBehaviour } from "../sim/cluster/mod.ts";
import { startSim } from "../sim/start.ts";
import { createAgentSet, rolledOut } from "./controller-on-sim.ts";
import { eventually } from "../lib/eventually.ts";
import { spawnMain, stop, untilAnswers } from "./processes.ts";

Deno.test({
  name: "serve over TLS: the relay reaches it with --ca-file and a rollout converges",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "edgeroll-tls-" });
    const sim = await startSim({
      nodes: 3,
      behaviour: (store, o) =>
        startClusterBehaviour(store, { ...o, speed: 50, seed: 7, log: () => {} }),
    });
    const children: Deno.ChildProcess[] = [];
    const pki = await writePki(`${dir}/pki`);
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(pki.caCertPath)] });
    try {
      for (const crd of edgerollCrds()) {
        sim.store.create("customresourcedefinitions.apiextensions.k8s.io", crd as never);
      }
      const tokenFile = `${dir}/token`;
      await Deno.writeTextFile(tokenFile, crypto.randomUUID());
      const port = freePort();
      const common = [`--kubeconfig=${sim.kubeconfigPath}`, `--token-file=${tokenFile}`];
      children.push(spawnMain([
        "serve",
        "--host=127.0.0.1",
        `--port=${port}`,
        `--tls-cert=${pki.servingCertPath}`,
        `--tls-key=${pki.servingKeyPath}`,
        ...common,
      ]));
      const url = `https://127.0.0.1:${port}`;
      await untilAnswers(`${url}/readyz`, children[0], 60_000, client);
      await assertRejects(() => fetch(`http://127.0.0.1:${port}/readyz`));

      children.push(spawnMain([
        "relay",
        `--target=${url}`,
        `--ca-file=${pki.caCertPath}`,
        ...common,
      ]));
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(sim.kubeconfigPath);
      await createAgentSet(kc, "agent:1");
      await eventually(
        "the set rolled out by the relay's events over TLS",
        () => Promise.resolve(rolledOut(sim, 1, "agent:1")),
        { timeoutMs: 60_000 },
      );
      assertEquals(rolledOut(sim, 1, "agent:1"), true);
    } finally {
      await stop(children);
      client.close();
      await sim.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
