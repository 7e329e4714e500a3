import { assertEquals } from "@std/assert";
import { updateBudget } from "./config.ts";

Deno.test("updateBudget: percentages round up, and both budgets zero allow one unavailable", () => {
  assertEquals(updateBudget({ maxUnavailable: "10%", maxSurge: 0 }, 95), {
    maxUnavailable: 10,
    maxSurge: 0,
  });
  assertEquals(updateBudget({ maxUnavailable: 0, maxSurge: "25%" }, 10), {
    maxUnavailable: 0,
    maxSurge: 3,
  });
  // Upstream's rule: a set that may neither take nodes down nor surge still moves, one at a time.
  assertEquals(updateBudget({ maxUnavailable: 0, maxSurge: 0 }, 5), {
    maxUnavailable: 1,
    maxSurge: 0,
  });
  assertEquals(updateBudget({ maxUnavailable: "0%", maxSurge: "0%" }, 0), {
    maxUnavailable: 0,
    maxSurge: 0,
  });
});
