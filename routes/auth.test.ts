import { assertEquals, assertThrows } from "@std/assert";
import { KubeClient } from "../kube/client.ts";
import { interceptApi } from "../kube/api.ts";
import { memoryApi } from "../kube/memory-api.ts";
import { staticTokenAuthenticator, tokenReviewAuthenticator } from "./auth.ts";
import { harness } from "./test-fixtures.ts";

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
