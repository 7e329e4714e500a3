import { assertEquals } from "@std/assert";
import { KubeError, toKubeError } from "./errors.ts";
import { backoffDelay, withRetry } from "./retry.ts";

const policy = { attempts: 5, baseDelayMs: 100, maxDelayMs: 1000 };
const error = (status: number, retryAfterSeconds?: number) =>
  new KubeError(status, "X", "m", "op", retryAfterSeconds);

Deno.test("backoff doubles, stops at the cap and honours Retry-After", () => {
  assertEquals([1, 2, 3, 4, 5].map((n) => backoffDelay(policy, n, error(500))), [
    100,
    200,
    400,
    800,
    1000,
  ]);
  assertEquals(backoffDelay(policy, 1, error(429, 0.5)), 500);
  assertEquals(backoffDelay(policy, 1, error(429, 30)), 1000, "a long Retry-After is capped");
});

Deno.test("withRetry sleeps the backoff between tries and returns the first success", async () => {
  const slept: number[] = [];
  let tries = 0;
  const result = await withRetry("op", () => {
    if (++tries < 3) throw error(503);
    return Promise.resolve("done");
  }, { ...policy, sleep: (ms) => Promise.resolve(void slept.push(ms)) });
  assertEquals([result, tries, slept], ["done", 3, [100, 200]]);
});

Deno.test("toKubeError reads code, Status reason and Retry-After from an ApiException", () => {
  const err = toKubeError({
    code: 429,
    body: JSON.stringify({ kind: "Status", reason: "TooManyRequests", message: "slow down" }),
    headers: { "retry-after": "2" },
  }, "list pods");
  assertEquals([err.status, err.reason, err.retryAfterSeconds, err.retryable], [
    429,
    "TooManyRequests",
    2,
    true,
  ]);
  assertEquals(toKubeError({ code: 502, body: "bad gateway" }, "get").reason, "InternalError");
  assertEquals(toKubeError({ code: 422, body: "" }, "create").reason, "Invalid");
});
