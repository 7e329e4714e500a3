// deno-lint-ignore-file no-explicit-any -- answers and statuses are untyped JSON
/**
 * The controller as it runs: real HTTP app, real client-node, against the simulator with
 * kubelets. A rollout converges with the right status; a converged set is left alone.
 */
import * as k8s from "@kubernetes/client-node";
import { assertEquals } from "@std/assert";
import {
  adsResource as group,
  createAgentSet,
  relayOptions,
  setAgentImage,
  withControllerOnSim,
} from "./controller-on-sim.ts";
import { eventually } from "../lib/eventually.ts";
import { startRelay } from "../relay/relay.ts";
import { tokenReviewAuthenticator } from "../routes/auth.ts";

async function readStatus(custom: k8s.CustomObjectsApi): Promise<any> {
  const set = await custom.getNamespacedCustomObject({
    ...group,
    namespace: "default",
    name: "agent",
  });
  return set;
}

/** Reconciles until the set says Complete for its current generation. */
async function reconcileUntilComplete(post: (p: string) => Promise<{ status: number; body: any }>) {
  return await eventually("the rollout to complete", async () => {
    const { status, body } = await post("/reconcile/advanceddaemonsets/default/agent");
    assertEquals(status, 200, JSON.stringify(body));
    const complete = body.conditions.find((c: any) => c.type === "Complete")?.status === "True";
    return complete && body.actions.length === 0 && body.status.observedGeneration !== undefined
      ? body
      : undefined;
  }, { timeoutMs: 30_000 });
}

Deno.test("a rollout on the simulator converges with the right status, then writes nothing", async () => {
  await withControllerOnSim({ nodes: 4 }, async ({ sim, kc, controller, post }) => {
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await createAgentSet(kc, "agent:1");

    const created = await reconcileUntilComplete(post);
    assertEquals(created.status.desiredNumberScheduled, 4);
    assertEquals(created.status.numberAvailable, 4);

    const set = await readStatus(custom);
    await setAgentImage(kc, "agent:2");
    const rolled = await reconcileUntilComplete(post);
    const status = (await readStatus(custom)).status;
    assertEquals(status.observedGeneration, set.metadata.generation + 1);
    assertEquals([status.desiredNumberScheduled, status.updatedNumberScheduled], [4, 4]);
    assertEquals([status.numberAvailable, status.numberReady, status.numberUnavailable ?? 0], [
      4,
      4,
      0,
    ]);
    assertEquals(rolled.requeueAfter, null);
    const pods =
      (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=agent" })).items
        .filter((p) => !p.metadata?.deletionTimestamp);
    assertEquals(pods.length, 4);
    assertEquals(new Set(pods.map((p) => p.spec?.nodeName)).size, 4, "one pod per node");
    assertEquals(pods.every((p) => p.spec?.containers[0].image === "agent:2"), true);

    // Converged: 100 more reconciles write nothing (the simulator counts every request).
    // Reconciles the caches call (node heartbeats) must not straddle the counts.
    const { queue } = controller.controller;
    await queue.idle();
    const before = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    for (let i = 0; i < 100; i++) {
      const { status, body } = await post("/reconcile/advanceddaemonsets/default/agent");
      assertEquals([status, body.claimed, body.actions.length], [200, false, 0]);
    }
    await queue.idle();
    const after = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    for (const verb of ["create", "update", "patch", "delete"]) {
      assertEquals(
        after.requests.byVerb[verb] ?? 0,
        before.requests.byVerb[verb] ?? 0,
        `${verb} requests`,
      );
    }
    // A warm reconcile reads nothing from the API server: the set, its pods and revisions and the
    // nodes come from the caches (ADR 0038). The set is read again only while the cache's copy
    // is older than the controller's own last write: once at most, right after converging.
    const delta = (resource: string, verb: string) =>
      (after.requests.byResource[resource]?.[verb] ?? 0) -
      (before.requests.byResource[resource]?.[verb] ?? 0);
    const gets = delta("advanceddaemonsets", "get");
    assertEquals(gets <= 1, true, `${gets} of 100 reconciles read the set from the API server`);
    assertEquals(
      [delta("pods", "list"), delta("nodes", "list"), delta("controllerrevisions", "list")],
      [0, 0, 0],
      "nodes, pods and revisions come from the caches",
    );
  });
});

Deno.test("POST /tick over the real client finds and rolls an AdvancedDaemonSet; readyz names the served kinds", async () => {
  // Without the caches, whose watches call reconciles of their own: the tick is then the only
  // trigger, so its first answer is the one that acts (with them, the set's watch event raced it).
  await withControllerOnSim({ nodes: 3, cache: false }, async ({ kc, controller, post }) => {
    const ready = await (await fetch(`${controller.url}/readyz`)).json();
    assertEquals(ready.served, ["advanceddaemonsets", "daemonsets"]);
    await createAgentSet(kc, "agent:1");
    const first = await post("/tick?full=true");
    assertEquals([first.status, first.body.served, first.body.sets], [
      200,
      ["advanceddaemonsets", "daemonsets"],
      1,
    ]);
    assertEquals(first.body.reconciled.map((e: any) => `${e.set} ${e.result}`), [
      "advanceddaemonsets/default/agent ok",
    ]);
    assertEquals(first.body.reconciled[0].actions > 0, true);
    // Ticks alone (what is due: nextCheckAt, generation) bring it to Complete.
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await eventually("the set Complete on 3 nodes through ticks alone", async () => {
      assertEquals((await post("/tick")).status, 200);
      const status = (await readStatus(custom)).status;
      return status?.conditions?.find((c: any) => c.type === "Complete")?.status === "True" &&
        status.numberAvailable === 3;
    }, { timeoutMs: 30_000 });
  });
});

Deno.test("a node that joins reaches every set from the caches' set watches, with no list of sets", async () => {
  await withControllerOnSim({ nodes: 2 }, async ({ sim, kc, controller, post }) => {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await createAgentSet(kc, "agent:1");
    await reconcileUntilComplete(post);
    await controller.controller.queue.idle();
    const before = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    // No tick runs here and no pod or set changes: only the node's change can call the reconcile
    // that places its pod, through the fan-out to every set.
    sim.store.create("nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "joined", labels: { "kubernetes.io/hostname": "joined" } },
      status: { conditions: [{ type: "Ready", status: "True" }] },
    } as never);
    await eventually(
      "a pod placed on the node that joined",
      async () =>
        (await core.listNamespacedPod({ namespace: "default", labelSelector: "app=agent" })).items
          .some((p) => p.spec?.nodeName === "joined"),
    );
    await controller.controller.queue.idle();
    const after = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    const lists = (resource: string) =>
      (after.requests.byResource[resource]?.list ?? 0) -
      (before.requests.byResource[resource]?.list ?? 0);
    assertEquals(
      [lists("advanceddaemonsets"), lists("daemonsets")],
      [0, 0],
      "the fan-out read the sets from the caches",
    );
  });
});

Deno.test("without caches (serve --no-cache) a reconcile lists pods, nodes and revisions", async () => {
  await withControllerOnSim({ nodes: 2, cache: false }, async ({ sim, kc, post, controller }) => {
    await createAgentSet(kc, "agent:1");
    // Its pods first: a step that writes pods is followed by another, which lists too.
    const path = "/reconcile/advanceddaemonsets/default/agent";
    await eventually(
      "nothing left to do",
      async () => (await post(path)).body.actions.length === 0,
    );
    await controller.controller.queue.idle();
    const before = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    for (let i = 0; i < 10; i++) {
      assertEquals((await post("/reconcile/advanceddaemonsets/default/agent")).status, 200);
    }
    const after = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
    assertEquals(after.requests.byVerb.list - (before.requests.byVerb.list ?? 0), 30);
  });
});

Deno.test("on the simulator: 404 for a missing set, 400 for bad input, 401 without a token", async () => {
  await withControllerOnSim({ nodes: 1 }, async ({ controller, post }) => {
    assertEquals((await post("/reconcile/advanceddaemonsets/default/nope")).status, 404);
    const bad = await post("/reconcile/statefulsets/default/x");
    assertEquals([bad.status, bad.body.error.issues.length > 0], [400, true]);
    const anonymous = await fetch(`${controller.url}/tick`, { method: "POST" });
    assertEquals(anonymous.status, 401);
    await anonymous.body?.cancel();
    const ready = await fetch(`${controller.url}/readyz`);
    assertEquals([ready.status, (await ready.json()).kubernetes.startsWith("v1.")], [200, true]);
  });
});

Deno.test("driven by the relay's events alone, a rollout on the simulator converges", async () => {
  await withControllerOnSim({ nodes: 3 }, async ({ kc, controller }) => {
    const relay = startRelay(relayOptions(kc, controller.url));
    try {
      const custom = kc.makeApiClient(k8s.CustomObjectsApi);
      await createAgentSet(kc, "agent:1");
      const complete = (generation: number) => async () => {
        const status = (await readStatus(custom)).status;
        return status?.observedGeneration === generation && status.updatedNumberScheduled === 3 &&
          status.numberAvailable === 3 &&
          status.conditions?.some((c: any) => c.type === "Complete" && c.status === "True");
      };
      await eventually("the first rollout", complete(1), { timeoutMs: 30_000 });
      await setAgentImage(kc, "agent:2");
      await eventually("the update", complete(2), { timeoutMs: 30_000 });
      assertEquals(relay.sender.stats.failedPosts, 0);
      assertEquals(
        relay.sender.stats.posts < relay.sender.stats.queued,
        true,
        "events were coalesced",
      );
    } finally {
      await relay.stop();
    }
  });
});

Deno.test("on the simulator: TokenReview lets the allowed ServiceAccount in, 403 for another, 401 for junk", async () => {
  const tokens = {
    "admin-token": { username: "sim-admin", groups: ["system:masters", "system:authenticated"] },
    "relay-token": {
      username: "system:serviceaccount:edgeroll:relay",
      groups: ["system:serviceaccounts"],
    },
    "other-token": {
      username: "system:serviceaccount:default:other",
      groups: ["system:serviceaccounts"],
    },
  };
  await withControllerOnSim({
    nodes: 1,
    tokens,
    auth: (kube) =>
      tokenReviewAuthenticator(kube, { allowed: ["system:serviceaccount:edgeroll:relay"] }),
  }, async ({ controller }) => {
    const tick = async (token: string) => {
      const res = await fetch(`${controller.url}/tick`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      await res.body?.cancel();
      return res.status;
    };
    assertEquals(await tick("relay-token"), 200);
    assertEquals(await tick("other-token"), 403);
    assertEquals(await tick("junk"), 401);
  });
});
