/**
 * The reconcile contract under pressure, on the simulator: concurrent callers, a flaky API
 * server with dropped watches, a controller replaced mid-rollout. Every pod transition is
 * recorded as the simulator commits it, and the budget must hold at every moment.
 */
import { assertEquals } from "@std/assert";
import { startRelay } from "../relay/relay.ts";
import {
  controllerToken,
  createAgentSet,
  relayOptions,
  rolledOut,
  setAgentImage,
  startReplica,
  watchBudget,
  withControllerOnSim,
} from "./controller-on-sim.ts";
import { eventually } from "../lib/eventually.ts";

const reconcilePath = "/reconcile/advanceddaemonsets/default/agent";

Deno.test("two controllers, a relay, a tick and a hammer at once: budget held, no pod twice", async () => {
  await withControllerOnSim(
    { nodes: 6, tickEveryMs: 100 },
    async ({ sim, kc, controller, post }) => {
      const second = startReplica(kc, { tickEveryMs: 150 });
      const relay = startRelay(relayOptions(kc, second.url));
      const budget = watchBudget(sim, "agent");
      let hammering = true;
      const statuses: number[] = [];
      const hammer = async (url: string) => {
        while (hammering) {
          const res = await fetch(`${url}${reconcilePath}`, {
            method: "POST",
            headers: { authorization: `Bearer ${controllerToken}` },
          });
          statuses.push(res.status);
          await res.body?.cancel();
        }
      };
      const hammers = [hammer(controller.url), hammer(second.url), hammer(controller.url)];
      try {
        await createAgentSet(kc, "agent:1", 2);
        await eventually("the first rollout", () => Promise.resolve(rolledOut(sim, 1, "agent:1")), {
          timeoutMs: 30_000,
        });
        budget.arm();
        await setAgentImage(kc, "agent:2");
        await eventually("the update", () => Promise.resolve(rolledOut(sim, 2, "agent:2")), {
          timeoutMs: 30_000,
        });
      } finally {
        hammering = false;
        await Promise.all(hammers);
        await relay.stop();
        await second.stop();
        budget.stop();
      }
      assertEquals(
        budget.worst.unavailableNodes <= 2,
        true,
        `unavailable nodes peaked at ${budget.worst.unavailableNodes}`,
      );
      assertEquals(budget.worst.podsOnOneNode, 1, "never two live pods on a node");
      assertEquals(budget.worst.transitions > 12, true);
      // Lost claims answer 409; anything else would be a bug.
      assertEquals(
        statuses.filter((s) => s !== 200 && s !== 409),
        [],
      );
      assertEquals((await post(reconcilePath)).body.actions, []);
    },
  );
});

Deno.test("10% of API calls failing and watches dropped: the rollout completes, nothing twice", async () => {
  await withControllerOnSim({ nodes: 5, tickEveryMs: 200 }, async ({ sim, kc, controller }) => {
    const options = relayOptions(kc, controller.url);
    const calm = startRelay(options);
    await createAgentSet(kc, "agent:1", 1);
    const budget = watchBudget(sim, "agent");
    try {
      await eventually("the first rollout", () => Promise.resolve(rolledOut(sim, 1, "agent:1")), {
        timeoutMs: 30_000,
      });
    } finally {
      await calm.stop();
    }
    budget.arm();
    const faults = await fetch(`${sim.url}/sim/v1/faults`, {
      method: "PUT",
      body: JSON.stringify({
        errors: [{ code: 500, rate: 0.05 }, { code: 429, rate: 0.05 }],
        watchDropSeconds: 1,
        seed: 11,
      }),
    });
    assertEquals(faults.status, 200);
    await faults.body?.cancel();
    // Started under the faults: its watches are the ones dropped every second.
    const relay = startRelay(options);
    try {
      await setAgentImage(kc, "agent:2").catch(() => setAgentImage(kc, "agent:2"));
      await eventually(
        "the update under faults",
        () => Promise.resolve(rolledOut(sim, 2, "agent:2")),
        { timeoutMs: 60_000 },
      );
      const restarts = relay.watches.reduce((n, w) => n + w.stats.starts - 1, 0);
      assertEquals(restarts > 0, true, "dropped watches were resumed");
    } finally {
      await relay.stop();
      budget.stop();
    }
    assertEquals(budget.worst.unavailableNodes, 1, "one node at a time, never more");
    assertEquals(budget.worst.podsOnOneNode, 1);
    const metrics = await controller.controller.metrics.text();
    const failed = /edgeroll_kube_requests_total\{verb="\w+",code="(500|429)"\} (\d+)/g;
    const injected = [...metrics.matchAll(failed)].reduce((n, m) => n + Number(m[2]), 0);
    assertEquals(injected > 0, true, "faults were met, and retried");
  });
});

Deno.test("a controller replaced mid-rollout: the new one continues from status, repeating nothing", async () => {
  await withControllerOnSim({ nodes: 6 }, async ({ sim, kc, controller, post }) => {
    let created = 0;
    const unsubscribe = sim.store.subscribe((event) => {
      if (event.resource === "pods" && event.type === "ADDED") created++;
    });
    const podsCreated = () => created;
    await createAgentSet(kc, "agent:1", 2);
    await eventually("the first rollout", async () => {
      await post(reconcilePath);
      return rolledOut(sim, 1, "agent:1");
    }, { timeoutMs: 30_000 });
    await setAgentImage(kc, "agent:2");
    // Drive the first controller until some, not all, nodes run the new revision.
    await eventually("the rollout under way", async () => {
      const { body } = await post(reconcilePath);
      const updated = body.status?.updatedNumberScheduled ?? 0;
      return body.status?.observedGeneration === 2 && updated >= 2 && updated < 6;
    }, { timeoutMs: 30_000 });
    const firstMetrics = await controller.controller.metrics.text();
    await controller.stop();

    const fresh = startReplica(kc);
    try {
      await eventually("the rollout finished by the new controller", async () => {
        const res = await fetch(`${fresh.url}${reconcilePath}`, {
          method: "POST",
          headers: { authorization: `Bearer ${controllerToken}` },
        });
        assertEquals(res.status, 200);
        await res.body?.cancel();
        return rolledOut(sim, 2, "agent:2");
      }, { timeoutMs: 30_000 });
      const secondMetrics = await fresh.controller.metrics.text();
      for (const text of [firstMetrics, secondMetrics]) {
        assertEquals(
          text.includes('verb="create",code="409"'),
          false,
          "no create found its pod already there",
        );
      }
      // Stored creations, not requests: each controller also proves each revision's pod with a
      // dry run (ADR 0023), which stores nothing.
      assertEquals(podsCreated(), 12, "six pods per revision, each created once");
    } finally {
      unsubscribe();
      await fresh.stop();
    }
  });
});

Deno.test("watches dropped and history compacted mid-rollout, no tick: no step waits for a resync", async () => {
  await withControllerOnSim({ nodes: 6 }, async ({ sim, kc, controller }) => {
    const relay = startRelay(relayOptions(kc, controller.url));
    // The longest stretch with no pod transition of the set while the update is unfinished:
    // with every event heard, a step at speed 50 takes well under a second.
    let last = 0;
    let longestMs = 0;
    const unsubscribe = sim.store.subscribe((event) => {
      if (event.resource !== "pods" || event.object.metadata.labels?.app !== "agent") return;
      const now = performance.now();
      if (last) longestMs = Math.max(longestMs, now - last);
      last = now;
    });
    let faulting = true;
    const fault = async (body: Record<string, unknown>) => {
      const res = await fetch(`${sim.url}/sim/v1/faults`, {
        method: "PUT",
        body: JSON.stringify(body),
      });
      assertEquals(res.status, 200);
      await res.body?.cancel();
    };
    try {
      await createAgentSet(kc, "agent:1", 1);
      await eventually("the first rollout", () => Promise.resolve(rolledOut(sim, 1, "agent:1")));
      // Every watch cut each second and every resumption 410 Gone: caches and the relay relist.
      const faults = (async () => {
        while (faulting) {
          await fault({ watchDropSeconds: 1, compact: true });
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      })();
      try {
        last = performance.now();
        longestMs = 0;
        await setAgentImage(kc, "agent:2");
        await eventually("the update", () => Promise.resolve(rolledOut(sim, 2, "agent:2")), {
          timeoutMs: 60_000,
        });
      } finally {
        faulting = false;
        await faults;
        await fault({});
      }
      const relists = relay.watches.reduce((n, w) => n + w.stats.relists, 0);
      // Each watch's first start counts one; more are 410 Gone met and started over.
      assertEquals(relists > relay.watches.length, true, "the relay's watches met 410 Gone");
      assertEquals(longestMs < 10_000, true, `a step waited ${longestMs.toFixed(0)} ms`);
      console.log(JSON.stringify({ longestStepMs: Math.round(longestMs), relists }));
    } finally {
      unsubscribe();
      await relay.stop();
    }
  });
});
