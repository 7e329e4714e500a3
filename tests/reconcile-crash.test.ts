/**
 * A controller that dies between its claim and the end of its actions: the next one, on any
 * replica, does not repeat what was claimed while the expectations stand, and finishes the
 * work once they expire. Real planner, in-memory API server, injected clocks.
 */
import { assertEquals } from "@std/assert";
import { memoryLogger } from "../lib/log.ts";
import { plan } from "../engine/plan.ts";
import * as f from "../engine/testdata/fleet.ts";
import { interceptApi } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { memoryApi } from "./doubles/memory-api.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { createReconciler } from "../controller/reconciler.ts";

const ref = { kind: "advanceddaemonsets" as const, namespace: "edge", name: "agent" };

Deno.test("a step killed after its claim is neither repeated nor lost", async () => {
  const api = memoryApi();
  api.put("advanceddaemonsets", f.advancedDaemonSet() as unknown as KubeObject);
  for (const node of f.nodes(4)) api.put("nodes", node as unknown as KubeObject);
  const creates = () => api.writes.filter((w) => w === "create pods").length;

  // The first controller proves the pod (a dry run, stored nowhere), lands one create, then
  // hangs forever on the next: it is dead.
  let landed = 0;
  const dying = new KubeClient(interceptApi(api, {
    createPod: (param, next) =>
      param.dryRun || landed++ === 0 ? next(param) : new Promise(() => {}),
  }));
  const now = f.t0;
  const reconcile = (kube: KubeClient, at: number) =>
    createReconciler({ kube, plan, clock: () => at, logger: memoryLogger() })(ref);
  reconcile(dying, now); // never settles
  for (let i = 0; i < 100 && creates() === 0; i++) await new Promise((r) => setTimeout(r, 1));
  assertEquals(creates(), 1);
  const claimed = api.objects.advanceddaemonsets.get("edge/agent")!.status as {
    expectations?: unknown[];
  };
  assertEquals(claimed.expectations?.length, 4, "the claim expected all four creates");

  // A fresh controller right after: the expectations stand, it creates nothing.
  const fresh = new KubeClient(api);
  const soon = await reconcile(fresh, now + 1000);
  assertEquals(soon.actions.filter((a) => a.type === "createPod"), []);
  assertEquals(creates(), 1);

  // Past the expectations' deadline the missing three are created, once each.
  const later = await reconcile(fresh, now + 61_000);
  assertEquals(
    later.actions.filter((a) => a.type === "createPod" && a.result === "done").length,
    3,
  );
  assertEquals(creates(), 4);
  assertEquals(api.objects.pods.size, 4);
  const again = await reconcile(fresh, now + 62_000);
  assertEquals(again.actions.filter((a) => a.type === "createPod"), []);
});
