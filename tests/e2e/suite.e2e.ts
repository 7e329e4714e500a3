/**
 * The end-to-end suite on the target `EDGEROLL_E2E_TARGET` names: `deno task test:e2e` runs it
 * on sim, `deno task test:cluster` on the real control plane. One target per run, stopped in
 * `finally`. (Not named *.test.ts: `deno task test` does not pick it up, the tasks name it.)
 */
import { Kube } from "./kube.ts";
import { scenarios } from "./scenarios.ts";
import { startTarget, targetKindFromEnv } from "./target.ts";

const kind = targetKindFromEnv();

Deno.test({
  name: `e2e scenarios on ${kind}`,
  // kubectl children and the cluster's detached processes are ours to stop, not the sanitizer's.
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const target = await startTarget(kind, { nodes: 3 });
    try {
      const kube = new Kube(target.kubeconfigPath);
      for (const scenario of scenarios) {
        await t.step(scenario.name, () => scenario.run(target, kube));
      }
    } finally {
      await target.stop();
    }
  },
});
