/**
 * The measurer (ADR 0055) against HTTP servers on loopback that answer as Prometheus's query API
 * and a service's health page do: what is due is asked, nothing else; hosts off the list, redirects,
 * large and slow answers are refused; a query Prometheus refuses reaches the planner in its words.
 * The real Prometheus is the e2e scenarios'.
 */
import { assert, assertEquals } from "@std/assert";
import type { AnalysisInput, AnalysisStatus } from "../api/analysis.ts";
import type { Snapshot } from "../api/plan.ts";
import { createAnalyzer } from "./analysis.ts";

const now = Date.parse("2026-11-29T12:00:00Z");

interface Served {
  url: string;
  host: string;
  asked: URL[];
  headers: Headers[];
  close(): Promise<void>;
}

/** A loopback server answering `answer`; every request it got is kept. */
function serve(answer: (url: URL) => Response | Promise<Response>): Served {
  const asked: URL[] = [];
  const headers: Headers[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const url = new URL(req.url);
    asked.push(url);
    headers.push(req.headers);
    return answer(url);
  });
  const { port } = server.addr as Deno.NetAddr;
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    asked,
    headers,
    close: () => server.shutdown(),
  };
}

const vector = (...values: number[]) =>
  Response.json({
    status: "success",
    data: {
      resultType: "vector",
      result: values.map((v, i) => ({ metric: { i: String(i) }, value: [now / 1000, String(v)] })),
    },
  });

/** A set with `analysis`, whose last status has a standing per domain due at `dueAt`. */
function setWith(
  analysis: AnalysisInput,
  standings: { check: string; domain?: string; nextAt?: string }[],
  generation = 1,
  validatedGeneration = 1,
): Snapshot {
  const status: { daemonSetHash: string; analysis: AnalysisStatus } = {
    daemonSetHash: "abc",
    analysis: {
      revision: "abc",
      validatedGeneration,
      checks: standings.map((s) => ({
        ...s,
        phase: "Running",
        passed: 0,
        failed: 0,
        inconclusive: 0,
        measurements: [],
      })),
    },
  };
  return {
    kind: "AdvancedDaemonSet",
    set: {
      metadata: { name: "agent", namespace: "edge", generation },
      spec: { updateStrategy: { rollingUpdate: { analysis } } },
      status,
    },
    pods: [],
    nodes: [],
    revisions: [],
  };
}

const ratioCheck = (address: string) => ({
  name: "errors",
  prometheus: { address, query: 'ratio{zone="{{domain}}"}' },
  successCondition: { max: 0.05 },
});

Deno.test("measurer: each due domain asked once, every series read, the others left alone", async () => {
  const prom = serve(() => vector(0.01, 0.02));
  try {
    const analyzer = createAnalyzer({ allowedHosts: [prom.host] });
    const due = new Date(now - 1000).toISOString();
    const later = new Date(now + 60_000).toISOString();
    const got = await analyzer.measure(
      "advanceddaemonsets",
      setWith({ checks: [ratioCheck(prom.url)] }, [
        { check: "errors", domain: "a", nextAt: due },
        { check: "errors", domain: "b", nextAt: later },
        { check: "errors", domain: "c" },
      ]),
      now,
    );
    assertEquals(got?.allowedHosts, [prom.host]);
    assertEquals(got?.measurements.map((m) => [m.domain, m.values]), [["a", [0.01, 0.02]]]);
    assertEquals(prom.asked.map((u) => u.searchParams.get("query")), ['ratio{zone="a"}']);
    assertEquals(prom.asked[0].pathname, "/api/v1/query");
    assertEquals(got?.validation, undefined);
  } finally {
    await prom.close();
  }
});

Deno.test("measurer: a new generation sends each query once; Prometheus's refusal in its words", async () => {
  const prom = serve((url) =>
    url.searchParams.get("query")!.includes("((")
      ? Response.json(
        { status: "error", errorType: "bad_data", error: 'parse error: unexpected "("' },
        { status: 400 },
      )
      : vector(0)
  );
  try {
    const analyzer = createAnalyzer({ allowedHosts: [prom.host] });
    const bad = { ...ratioCheck(prom.url), name: "bad" };
    bad.prometheus = { address: prom.url, query: "sum((" };
    const got = await analyzer.measure(
      "advanceddaemonsets",
      setWith({ checks: [ratioCheck(prom.url), bad] }, [], 2, 1),
      now,
    );
    assertEquals(got?.validation, {
      generation: 2,
      refusals: [{ check: "bad", message: 'bad_data: parse error: unexpected "("' }],
    });
    assertEquals(prom.asked.length, 2);
  } finally {
    await prom.close();
  }
  // Prometheus unreachable: nothing is known of the queries, the generation is not recorded.
  const gone = createAnalyzer({ allowedHosts: [prom.host] });
  const got = await gone.measure(
    "advanceddaemonsets",
    setWith({ checks: [ratioCheck(prom.url)] }, [], 2, 1),
    now,
  );
  assertEquals(got?.validation, undefined);
});

Deno.test("measurer: no answer to judge is an error the planner reads as inconclusive", async () => {
  let redirected = 0;
  const elsewhere = serve(() => {
    redirected++;
    return vector(0);
  });
  const prom = serve((url) => {
    const zone = /zone="(\w+)"/.exec(url.searchParams.get("query")!)![1];
    if (zone === "unavailable") {
      return Response.json({ status: "error", errorType: "unavailable", error: "x" }, {
        status: 503,
      });
    }
    if (zone === "moved") return Response.redirect(`${elsewhere.url}/api/v1/query`, 302);
    if (zone === "large") return new Response("x".repeat(1024 * 1024 + 10));
    if (zone === "slow") return new Promise((r) => setTimeout(() => r(vector(0)), 400));
    return vector();
  });
  try {
    const analyzer = createAnalyzer({ allowedHosts: [prom.host], timeoutMs: 150 });
    const due = new Date(now).toISOString();
    const zones = ["unavailable", "moved", "large", "slow", "empty"];
    const got = await analyzer.measure(
      "advanceddaemonsets",
      setWith(
        { checks: [ratioCheck(prom.url)] },
        zones.map((domain) => ({ check: "errors", domain, nextAt: due })),
      ),
      now,
    );
    const byZone = new Map(got!.measurements.map((m) => [m.domain, m]));
    assert(byZone.get("unavailable")?.error?.startsWith("answered 503"));
    assert(byZone.get("moved")?.error?.includes("redirects are not followed"));
    assert(byZone.get("large")?.error?.includes("above 1048576 bytes"));
    assertEquals(byZone.get("slow")?.error, "no answer within 0.15 s");
    assertEquals(byZone.get("empty")?.values, []);
    assertEquals(redirected, 0);
  } finally {
    await new Promise((r) => setTimeout(r, 300));
    await prom.close();
    await elsewhere.close();
  }
});

Deno.test("measurer: a host off the list is never asked; an HTTP check reads its JSON field with the Secret's token", async () => {
  const service = serve((url) =>
    url.pathname === "/status/b"
      ? Response.json({ state: { ok: false } })
      : Response.json({ state: { ok: true } })
  );
  try {
    const check = {
      name: "health",
      http: { url: `${service.url}/status/{{domain}}`, jsonPath: "state.ok" },
      successCondition: { equals: "true" },
      secretRef: { name: "health-token" },
    };
    const due = new Date(now).toISOString();
    const standings = ["a", "b"].map((domain) => ({ check: "health", domain, nextAt: due }));
    const refused = await createAnalyzer({ allowedHosts: ["127.0.0.1:1"] }).measure(
      "advanceddaemonsets",
      setWith({ checks: [check] }, standings),
      now,
    );
    assert(refused!.measurements.every((m) => m.error?.includes("is not among the hosts")));
    assertEquals(service.asked.length, 0);

    const read: string[] = [];
    const analyzer = createAnalyzer({
      allowedHosts: [service.host],
      readCredentials: (namespace, name) => {
        read.push(`${namespace}/${name}`);
        return Promise.resolve({ token: "s3cret" });
      },
    });
    const got = await analyzer.measure(
      "advanceddaemonsets",
      setWith({ checks: [check] }, standings),
      now,
    );
    assertEquals(
      got!.measurements.map((m) => [m.domain, m.httpStatus, m.values]).sort(),
      [["a", 200, [true]], ["b", 200, [false]]],
    );
    assertEquals(read, ["edge/health-token", "edge/health-token"]);
    assert(service.headers.every((h) => h.get("authorization") === "Bearer s3cret"));
  } finally {
    await service.close();
  }
});
