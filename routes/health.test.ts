import { assertEquals, assertStringIncludes } from "@std/assert";
import { KubeError } from "../kube/errors.ts";
import { harness } from "../tests/doubles/controller-harness.ts";

Deno.test("healthz is always ok; readyz says whether Kubernetes answers", async () => {
  await using up = harness();
  assertEquals(await (await up.controller.app.request("/healthz")).json(), { ok: true });
  const ready = await up.controller.app.request("/readyz");
  const readyBody = await ready.json();
  assertEquals([ready.status, readyBody.kubernetes], [200, "v1.32.0-memory"]);
  assertEquals(readyBody.served, ["advanceddaemonsets", "daemonsets"]);
  const address = "https://10.96.0.1:443";
  await using down = harness({
    overrides: {
      getVersion: () =>
        Promise.reject(new KubeError(0, "Unreachable", `connect ECONNREFUSED ${address}`, "get")),
    },
  });
  const notReady = await down.controller.app.request("/readyz");
  assertEquals(notReady.status, 503);
  const body = await notReady.text();
  assertEquals(JSON.parse(body).error.reason, "NotReady");
  // Unauthenticated: it tells nobody where the API server is; the log has the reason.
  assertEquals(body.includes(address), false);
  assertEquals(down.logs.lines.some((l) => String(l.error).includes(address)), true);
  assertEquals((await down.controller.app.request("/healthz")).status, 200);
});

Deno.test("metrics count reconciles by result, pods written, budget and conditions", async () => {
  // The step that follows the pod writes reads only once the metrics have been read.
  const read = Promise.withResolvers<void>();
  let reads = 0;
  await using h = harness({
    nodes: 2,
    overrides: {
      getSet: (param, next) =>
        param.name !== "agent" || ++reads === 1
          ? next(param)
          : read.promise.then(() => next(param)),
    },
  });
  await h.request("/reconcile/advanceddaemonsets/edge/agent");
  await h.request("/reconcile/advanceddaemonsets/edge/missing");
  const res = await h.controller.app.request("/metrics");
  assertEquals(res.status, 200);
  assertStringIncludes(res.headers.get("content-type") ?? "", "text/plain");
  const text = await res.text();
  assertStringIncludes(text, 'edgeroll_reconciles_total{result="acted"} 1');
  assertStringIncludes(text, 'edgeroll_reconciles_total{result="notfound"} 1');
  assertStringIncludes(text, 'edgeroll_pods_updated_total{action="createPod"} 2');
  assertStringIncludes(text, 'edgeroll_budget_in_use{set="advanceddaemonsets/edge/agent"} 2');
  assertStringIncludes(text, 'edgeroll_sets{condition="Progressing"} 1');
  assertStringIncludes(text, "edgeroll_reconcile_duration_seconds_count 2");
  assertStringIncludes(text, 'edgeroll_kube_requests_total{verb="list",code="200"} 3');
  assertStringIncludes(text, 'edgeroll_kube_requests_total{verb="get",code="404"} 1');
  assertStringIncludes(text, 'edgeroll_kube_requests_total{verb="create",code="200"} 3');
  read.resolve();
});

Deno.test("an unknown route answers 404 in JSON", async () => {
  await using h = harness();
  const res = await h.controller.app.request("/nope");
  assertEquals(res.status, 404);
  assertEquals((await res.json()).error.reason, "NotFound");
});

Deno.test("a route asked with the wrong method answers 405 with Allow, in JSON; an unknown one 404", async () => {
  await using h = harness();
  for (const path of ["/tick", "/events", "/reconcile/advanceddaemonsets/edge/agent"]) {
    const res = await h.controller.app.request(path);
    assertEquals([res.status, res.headers.get("allow")], [405, "POST"], path);
    assertEquals((await res.json()).error.reason, "MethodNotAllowed");
  }
  const upgrade = await h.controller.app.request(
    "/openyurt.io/v1/namespaces/default/pods/p/upgrade",
    { method: "DELETE" },
  );
  assertEquals([upgrade.status, upgrade.headers.get("allow")], [405, "POST"]);
  await upgrade.body?.cancel();
  const unknown = await h.controller.app.request("/nothing/here", { method: "POST" });
  assertEquals(unknown.status, 404);
  await unknown.body?.cancel();
});
