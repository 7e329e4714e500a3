import { assertEquals, assertThrows } from "@std/assert";
import { KubeClient } from "../kube/client.ts";
import { interceptApi } from "../kube/api.ts";
import { memoryApi } from "../tests/doubles/memory-api.ts";
import { staticTokenAuthenticator, tokenReviewAuthenticator } from "./auth.ts";
import { harness } from "../tests/doubles/controller-harness.ts";

const path = "/reconcile/advanceddaemonsets/edge/agent";

Deno.test("no token answers 401 with a Bearer challenge; a wrong one 401", async () => {
  await using h = harness();
  const none = await h.request(path, { auth: false });
  assertEquals(none.status, 401);
  assertEquals(none.headers.get("www-authenticate")?.startsWith("Bearer"), true);
  assertEquals((await none.json()).error.reason, "Unauthorized");
  const wrong = await h.request(path, { auth: false, headers: { authorization: "Bearer nope" } });
  assertEquals(wrong.status, 401);
  const basic = await h.request(path, { auth: false, headers: { authorization: "Basic YTpi" } });
  assertEquals(basic.status, 401);
  assertEquals(h.plans.length, 0);
});

Deno.test("every mutating route is guarded; health and metrics are open", async () => {
  await using h = harness();
  for (const route of [path, "/events", "/tick"]) {
    assertEquals((await h.request(route, { auth: false })).status, 401, route);
  }
  for (const route of ["/healthz", "/readyz", "/metrics"]) {
    assertEquals((await h.controller.app.request(route)).status, 200, route);
  }
});

Deno.test("TokenReview: unknown token 401, known but not allowed 403, allowed 200", async () => {
  const api = memoryApi();
  api.tokens.set("sa-relay", { username: "system:serviceaccount:edgeroll:relay" });
  api.tokens.set("sa-other", { username: "system:serviceaccount:default:other" });
  api.tokens.set("sa-group", { username: "someone", groups: ["edgeroll-callers"] });
  let reviews = 0;
  const kube = new KubeClient(interceptApi(api, {
    createTokenReview: (p, next) => {
      reviews++;
      return next(p);
    },
  }));
  const auth = tokenReviewAuthenticator(kube, {
    allowed: ["system:serviceaccount:edgeroll:relay", "group:edgeroll-callers"],
  });
  await using h = harness({ deps: { auth } });
  const call = (token: string) =>
    h.request(path, { auth: false, headers: { authorization: `Bearer ${token}` } });
  assertEquals((await call("forged")).status, 401);
  const forbidden = await call("sa-other");
  assertEquals(forbidden.status, 403);
  assertEquals(
    (await forbidden.json()).error.message.includes("system:serviceaccount:default:other"),
    true,
  );
  assertEquals((await call("sa-relay")).status, 200);
  assertEquals((await call("sa-group")).status, 200);
  const before = reviews;
  assertEquals((await call("sa-relay")).status, 200);
  assertEquals(reviews, before, "a positive review is reused for a while");
});

Deno.test("auth refuses to start without a token or an allowed list", () => {
  assertThrows(() => staticTokenAuthenticator("  "), Error, "empty");
  assertThrows(
    () => tokenReviewAuthenticator(new KubeClient(memoryApi()), { allowed: [] }),
    Error,
    "allowed",
  );
});

Deno.test("TokenReview with --audience: only tokens meant for the controller pass", async () => {
  const api = memoryApi();
  const relay = "system:serviceaccount:edgeroll:relay";
  api.tokens.set("projected", { username: relay, audiences: ["edgeroll-controller"] });
  api.tokens.set("api-token", { username: relay, audiences: ["https://kubernetes.default.svc"] });
  const auth = tokenReviewAuthenticator(new KubeClient(api), {
    allowed: [relay],
    audiences: ["edgeroll-controller"],
  });
  await using h = harness({ deps: { auth } });
  const call = (token: string) =>
    h.request(path, { auth: false, headers: { authorization: `Bearer ${token}` } });
  assertEquals((await call("projected")).status, 200);
  const refused = await call("api-token");
  assertEquals(refused.status, 401);
  assertEquals((await refused.json()).error.message.includes("audiences"), true);
});

Deno.test("TokenReview bounds: a wrong token is reviewed once, a flood of them at the rate", async () => {
  const api = memoryApi();
  api.tokens.set("sa-relay", { username: "system:serviceaccount:edgeroll:relay" });
  let reviews = 0;
  let release = () => {};
  let gate = Promise.resolve();
  const kube = new KubeClient(interceptApi(api, {
    createTokenReview: async (p, next) => {
      reviews++;
      await gate;
      return next(p);
    },
  }));
  let now = 1_000_000;
  const auth = tokenReviewAuthenticator(kube, {
    allowed: ["system:serviceaccount:edgeroll:relay"],
    reviewsPerSecond: 5,
    clock: () => now,
  });
  await using h = harness({ deps: { auth } });
  const call = (token: string) =>
    h.request(path, { auth: false, headers: { authorization: `Bearer ${token}` } });

  // 200 calls with the same wrong token: one review; the rejection is remembered.
  for (let i = 0; i < 200; i++) assertEquals((await call("wrong")).status, 401);
  assertEquals(reviews, 1);
  // Concurrent calls with one new token wait for one review.
  gate = new Promise((resolve) => release = resolve);
  const together = Array.from({ length: 20 }, () => call("sa-relay"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  release();
  // Authenticated, all of them (concurrent reconciles of one set may lose their claim: 409).
  const statuses = (await Promise.all(together)).map((r) => r.status);
  assertEquals(statuses.filter((s) => s !== 200 && s !== 409), []);
  assertEquals(reviews, 2);

  // 100 distinct wrong tokens at once: the bucket holds 5 a second, the rest answer 429.
  now += 1000;
  const flood = await Promise.all(Array.from({ length: 100 }, (_, i) => call(`forged-${i}`)));
  assertEquals(reviews, 2 + 5);
  assertEquals(flood.filter((r) => r.status === 401).length, 5);
  const limited = flood.filter((r) => r.status === 429);
  assertEquals(limited.length, 95);
  assertEquals(limited[0].headers.get("retry-after"), "1");
  // A remembered good token passes while the bucket is empty; a second later reviews resume.
  assertEquals((await call("sa-relay")).status, 200);
  now += 1000;
  assertEquals((await call("forged-99")).status, 401);
  // The remembered rejection expires after its TTL (10 s) and is reviewed again.
  const before = reviews;
  now += 11_000;
  assertEquals((await call("wrong")).status, 401);
  assertEquals(reviews, before + 1);
});
