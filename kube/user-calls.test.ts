/**
 * The calls a person's commands make (kube/user-calls.ts), over client-node against the
 * simulator: a CRD and a set created as the demo creates them, patched, replaced under a stale
 * resourceVersion (refused, naming the call), and a set's Events listed as the dashboard lists
 * them.
 */
import { assertEquals, assertRejects } from "@std/assert";
import { edgerollCrds } from "../api/crd.ts";
import { KubeError } from "./errors.ts";
import type { KubeObject } from "./wire-objects.ts";
import { userCalls } from "./user-calls.ts";
import { agentSet } from "../tests/controller-on-sim.ts";
import { withSim } from "../tests/sim/helpers.ts";

Deno.test("userCalls: create, merge patch, replace and list Events against the simulator", async () => {
  await withSim({ nodes: 1 }, async (sim, kc) => {
    const user = userCalls(kc);
    for (const crd of edgerollCrds()) await user.create(crd as KubeObject);
    const created = await user.create(agentSet("agent:1") as KubeObject);
    assertEquals(created.metadata?.name, "agent");

    await user.mergePatch({
      apiVersion: "apps.edgeroll.dev/v1alpha1",
      kind: "AdvancedDaemonSet",
      metadata: { name: "agent", namespace: "default" },
      spec: { minReadySeconds: 7 },
    });
    const stored = sim.store.get(
      "advanceddaemonsets.apps.edgeroll.dev",
      "default",
      "agent",
    ) as KubeObject;
    assertEquals((stored.spec as { minReadySeconds?: number }).minReadySeconds, 7);

    // Replaced under the version read before the patch: the server refuses, nothing changes.
    const stale = await assertRejects(
      () =>
        user.replaceSet({
          kind: "advanceddaemonsets",
          object: { ...created, spec: { ...(created.spec as object), minReadySeconds: 1 } },
        }),
      KubeError,
    );
    assertEquals(stale.status, 409);
    assertEquals(stale.message.startsWith("replace advanceddaemonsets default/agent"), true);
    const replaced = await user.replaceSet({
      kind: "advanceddaemonsets",
      object: { ...stored, spec: { ...(stored.spec as object), minReadySeconds: 3 } },
    });
    assertEquals((replaced.spec as { minReadySeconds?: number }).minReadySeconds, 3);

    const uid = created.metadata?.uid ?? "";
    await user.create({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "agent.1", namespace: "default" },
      involvedObject: { kind: "AdvancedDaemonSet", namespace: "default", name: "agent", uid },
      reason: "Tested",
      message: "by the test",
      type: "Normal",
    } as KubeObject);
    const events = await user.listEvents({
      namespace: "default",
      fieldSelector: `involvedObject.uid=${uid}`,
    });
    assertEquals(events.map((e) => (e as { reason?: string }).reason), ["Tested"]);
    const other = await user.listEvents({
      namespace: "default",
      fieldSelector: "involvedObject.uid=not-this-one",
    });
    assertEquals(other, []);
  });
});
