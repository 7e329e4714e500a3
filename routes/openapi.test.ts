import { assertEquals } from "@std/assert";
import type { Hono } from "hono";
import { harness } from "../tests/doubles/controller-harness.ts";
import { memoryLogger } from "../lib/log.ts";
import { openOnLoopback } from "./auth.ts";
import { controllerRouteDocs } from "./controller-api.ts";
import { edgeAgentRouteDocs } from "./ota-docs.ts";
import { openApiPath, type RouteDoc } from "./openapi.ts";
import { openApiFiles } from "../cli/openapi-command.ts";
import { createEdgeApp } from "../edge/agent.ts";
import type { OtaService } from "./ota.ts";

/** What a Hono app answers: `METHOD /path` of each handler (not its middleware). */
const served = (app: Hono) =>
  [...new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${r.path}`))]
    .sort();
const documented = (docs: RouteDoc[]) =>
  docs.map((d) => `${d.method.toUpperCase()} ${d.path}`).sort();

const ota: OtaService = {
  pods: () => Promise.resolve({ list: { kind: "PodList", apiVersion: "v1", items: [] } }),
  upgrade: () => Promise.resolve({ status: 200, text: "Start updating pod a/b" }),
  imagePull: () => Promise.resolve({ status: 200, text: "Image pre-pull requested for pod a/b" }),
};
const edgeApp = () =>
  createEdgeApp({
    ota,
    node: "edge-1",
    connected: () => true,
    guard: openOnLoopback,
    logger: memoryLogger(),
  });

Deno.test("the committed OpenAPI documents equal a fresh generation (run `deno task openapi` after a route change)", async () => {
  for (const [name, text] of openApiFiles()) {
    const committed = await Deno.readTextFile(new URL(`./openapi/${name}`, import.meta.url));
    assertEquals(committed, text, name);
  }
});

Deno.test("the documents list every route the controller and the edge agent serve, and no other", async () => {
  for (const kruise of [true, false]) {
    await using h = harness({ nodes: 1, kruise });
    assertEquals(served(h.controller.app), documented(controllerRouteDocs({ kruise })));
  }
  assertEquals(served(edgeApp()), documented(edgeAgentRouteDocs()));
});

Deno.test("/openapi.json is served by both; the edge agent's is the committed one", async () => {
  await using h = harness({ nodes: 1, kruise: true });
  const fromController = await h.controller.app.request("/openapi.json");
  assertEquals(fromController.status, 200);
  assertEquals(await fromController.json(), JSON.parse(openApiFiles()[0][1]));
  const fromAgent = await edgeApp().request("/openapi.json");
  assertEquals(await fromAgent.json(), JSON.parse(openApiFiles()[1][1]));
});

/** The documented answer of `route` for `status`; fails the test when there is none. */
function documentedAnswer(docs: RouteDoc[], method: string, path: string, status: number) {
  const doc = docs.find((d) =>
    d.method === method && new RegExp(`^${openApiPath(d.path).replace(/\{[^}]+\}/g, "[^/]+")}$`)
      .test(path)
  );
  const answer = doc?.responses[status];
  if (!answer) throw new Error(`${method} ${path} answered ${status}, which is not documented`);
  return answer;
}

Deno.test("the controller's answers, good and bad, are the documented status and shape", async () => {
  await using h = harness({ nodes: 2, kruise: true });
  const docs = controllerRouteDocs({ kruise: true });
  const asked: [method: "get" | "post", path: string, init?: RequestInit & { auth?: boolean }][] = [
    ["get", "/healthz"],
    ["get", "/readyz"],
    ["post", "/reconcile/advanceddaemonsets/edge/agent"],
    ["post", "/reconcile/advanceddaemonsets/edge/agent?dryRun=true"],
    ["post", "/reconcile/advanceddaemonsets/Edge/agent"],
    ["post", "/reconcile/advanceddaemonsets/edge/agent", { auth: false }],
    ["post", "/tick?full=true"],
    ["post", "/tick?full=maybe"],
    ["post", "/events", {
      headers: { "content-type": "application/cloudevents+json" },
      body: JSON.stringify({
        specversion: "1.0",
        id: "1",
        source: "test",
        type: "dev.knative.apiserver.resource.update",
        data: { apiVersion: "v1", kind: "Node", metadata: { name: "node-0" } },
      }),
    }],
    ["post", "/events", {
      headers: { "content-type": "application/cloudevents+json" },
      body: "{}",
    }],
    ["post", "/convert", { body: JSON.stringify({ kind: "ConversionReview" }) }],
    ["get", "/pods?node=node-0"],
    ["get", "/pods?node=Node_0"],
    ["post", "/openyurt.io/v1/namespaces/edge/pods/nothing/upgrade"],
    ["post", "/openyurt.io/v1/namespaces/edge/pods/nothing/upgrade?whenConnected=true"],
    ["post", "/openyurt.io/v1/namespaces/edge/pods/nothing/imagepull"],
  ];
  const seen: string[] = [];
  for (const [method, path, init] of asked) {
    const res = await h.request(path, { method: method.toUpperCase(), ...init });
    const answer = documentedAnswer(docs, method, new URL(path, "http://x").pathname, res.status);
    const type = res.headers.get("content-type") ?? "";
    if (answer.json) {
      assertEquals(type.startsWith("application/json"), true, `${path}: ${type}`);
      const parsed = answer.json.safeParse(await res.json());
      assertEquals(parsed.success, true, `${method} ${path} ${res.status}: ${parsed.error}`);
    } else {
      assertEquals(type.startsWith("text/plain"), true, `${path}: ${type}`);
      await res.body?.cancel();
    }
    seen.push(`${method} ${path} ${res.status}`);
  }
  // The cases above reach the answers they were written for.
  assertEquals(seen.map((s) => s.split(" ").at(-1)), [
    "200",
    "200",
    "200",
    "200",
    "400",
    "401",
    "200",
    "400",
    "202",
    "400",
    "400",
    "200",
    "400",
    "404",
    "400",
    "404",
  ]);
});
