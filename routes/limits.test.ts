import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { harness } from "../tests/doubles/controller-harness.ts";

Deno.test("a request line and headers past the limit answer 431 before any route runs", async () => {
  await using h = harness({ deps: { limits: { headerBytes: 2048 } } });
  const big = await h.request("/reconcile/advanceddaemonsets/edge/agent", {
    headers: { "x-padding": "x".repeat(4096) },
  });
  assertEquals(big.status, 431);
  assertEquals((await big.json()).error.reason, "RequestHeaderFieldsTooLarge");
  const longTarget = await h.request(`/tick?${"a=1&".repeat(600)}`);
  assertEquals(longTarget.status, 431);
  await longTarget.body?.cancel();
  assertEquals(h.plans.length, 0, "nothing was reconciled");
  const fits = await h.request("/reconcile/advanceddaemonsets/edge/agent");
  assertEquals(fits.status, 200);
  await fits.body?.cancel();
});

Deno.test("a request not answered in time answers 504 Timeout; the reconcile it began goes on", async () => {
  let release!: () => void;
  const held = new Promise<void>((resolve) => release = resolve);
  await using h = harness({
    deps: { limits: { requestMs: 50 } },
    overrides: {
      getSet: async (param, next) => {
        await held;
        return next(param);
      },
    },
  });
  const res = await h.request("/reconcile/advanceddaemonsets/edge/agent");
  assertEquals(res.status, 504);
  const { error } = await res.json();
  assertEquals([error.reason, error.message], ["Timeout", "no answer within 50 ms"]);
  release();
  await eventually("the reconcile to plan after its caller was answered", () => h.plans.length > 0);
  await h.controller.queue.idle();
  assertEquals(h.api.writes.filter((w) => w === "create pods").length, 3, "it acted");
  assertEquals(h.plans.length, 2, "and the step its pod writes ask for followed");
});
