/**
 * The measurer (ADR 0055) against HTTP servers on loopback that answer as Prometheus's query API
 * and a service's health page do: what is due is asked, nothing else; hosts off the list, redirects,
 * large and slow answers are refused; a query Prometheus refuses reaches the planner in its words.
 * The real Prometheus is the e2e scenarios'.
 */
import { assert, assertEquals } from "@std/assert";
import {
  Analysis,
  analysisAnnotation,
  type AnalysisInput,
  type AnalysisStatus,
  queriesHash,
} from "../api/analysis.ts";
import type { Snapshot } from "../api/plan.ts";
import { kruiseSetKind } from "../api/set-ref.ts";
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

/** The status a plan wrote: a standing per domain, and the queries' hash it recorded, if any. */
function statusWith(
  standings: { check: string; domain?: string; nextAt?: string }[],
  validated: Record<string, unknown>,
): { daemonSetHash: string; analysis: AnalysisStatus } {
  return {
    daemonSetHash: "abc",
    analysis: {
      revision: "abc",
      ...validated,
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
}

const hashOf = (analysis: AnalysisInput) => queriesHash(Analysis.parse(analysis));
/** The hash a plan recorded once Prometheus accepted `analysis`'s queries. */
const validatedAs = (analysis: AnalysisInput) => ({ validatedQueriesHash: hashOf(analysis) });

/**
 * An AdvancedDaemonSet with `analysis` in its spec, whose last status has a standing per domain
 * and, by default, `analysis`'s queries validated.
 */
function setWith(
  analysis: AnalysisInput,
  standings: { check: string; domain?: string; nextAt?: string }[],
  validated: Record<string, unknown> = validatedAs(analysis),
  generation = 1,
): Snapshot {
  return {
    kind: "AdvancedDaemonSet",
    set: {
      metadata: { name: "agent", namespace: "edge", generation },
      spec: { updateStrategy: { rollingUpdate: { analysis } } },
      status: statusWith(standings, validated),
    },
    pods: [],
    nodes: [],
    revisions: [],
  };
}

/**
 * A Kruise or OpenYurt DaemonSet with `analysis` in its annotation, its generation 1 whatever the
 * annotation says (an annotation edit does not bump it), its last status validating `validated`.
 */
function annotatedSetWith(
  kind: "daemonsets" | typeof kruiseSetKind,
  analysis: AnalysisInput,
  validated: AnalysisInput,
): Snapshot {
  const metadata = {
    name: "agent",
    namespace: "edge",
    uid: "uid-agent",
    generation: 1,
    annotations: { [analysisAnnotation]: JSON.stringify(analysis) },
  };
  const { daemonSetHash, ...rest } = statusWith([], validatedAs(validated));
  const objects = { pods: [], nodes: [], revisions: [] };
  if (kind === kruiseSetKind) {
    // Kruise's status names the revision updateRevision.
    const set = { metadata, spec: {}, status: { updateRevision: daemonSetHash, ...rest } };
    return { kind: "KruiseDaemonSet", set, ...objects };
  }
  return {
    kind: "DaemonSet",
    set: {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata,
      spec: {
        selector: { matchLabels: { app: "agent" } },
        template: { metadata: { labels: { app: "agent" } }, spec: { containers: [] } },
      },
    },
    rolloutStatus: {
      metadata: { ownerReferences: [{ uid: metadata.uid }] },
      status: { daemonSetHash, ...rest },
    },
    ...objects,
  };
}

/** A Prometheus that refuses any query with `((` as bad_data, and answers 0 to the others. */
const refusingParseErrors = (url: URL) =>
  url.searchParams.get("query")!.includes("((")
    ? Response.json(
      { status: "error", errorType: "bad_data", error: 'parse error: unexpected "("' },
      { status: 400 },
    )
    : vector(0);

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

const badCheck = (address: string) => ({
  ...ratioCheck(address),
  name: "bad",
  prometheus: { address, query: "sum((" },
});

/** What a controller that may reach `prom` measures of an AdvancedDaemonSet now. */
const measuredVia = (prom: Served, snapshot: Snapshot) =>
  createAnalyzer({ allowedHosts: [prom.host] }).measure("advanceddaemonsets", snapshot, now);

Deno.test("measurer: changed queries are each sent once; Prometheus's refusal in its words", async () => {
  const prom = serve(refusingParseErrors);
  const before = { checks: [ratioCheck(prom.url)] };
  const after = { checks: [ratioCheck(prom.url), badCheck(prom.url)] };
  try {
    const got = await measuredVia(prom, setWith(after, [], validatedAs(before), 2));
    assertEquals(got?.validation, {
      queriesHash: hashOf(after),
      refusals: [{ check: "bad", message: 'bad_data: parse error: unexpected "("' }],
    });
    assertEquals(prom.asked.length, 2);
  } finally {
    await prom.close();
  }
  // Prometheus unreachable: nothing is known of the queries, the hash is not recorded.
  const got = await measuredVia(prom, setWith(after, [], validatedAs(before), 2));
  assertEquals(got?.validation, undefined);
});

Deno.test("measurer: an AdvancedDaemonSet's queries are sent again when its checks change, not when only its generation does", async () => {
  const prom = serve(() => vector(0));
  try {
    const before = { checks: [ratioCheck(prom.url)] };
    // A new template: generation 2, the same checks; nothing to send.
    const template = await measuredVia(prom, setWith(before, [], validatedAs(before), 2));
    assertEquals([template?.validation, prom.asked.length], [undefined, 0]);
    // The check's query changed: sent once, accepted, its hash for the plan to record.
    const changed = {
      checks: [{ ...ratioCheck(prom.url), prometheus: { address: prom.url, query: "up" } }],
    };
    const got = await measuredVia(prom, setWith(changed, [], validatedAs(before), 3));
    assertEquals(got?.validation, { queriesHash: hashOf(changed), refusals: [] });
    assertEquals(prom.asked.map((u) => u.searchParams.get("query")), ["up"]);
  } finally {
    await prom.close();
  }
});

Deno.test("measurer: a Kruise or OpenYurt set's annotation edited, its generation unchanged, sends the new query", async () => {
  for (const kind of ["daemonsets", kruiseSetKind] as const) {
    const prom = serve(refusingParseErrors);
    try {
      const analyzer = createAnalyzer({ allowedHosts: [prom.host] });
      const before = { checks: [ratioCheck(prom.url)] };
      const after = { checks: [ratioCheck(prom.url), badCheck(prom.url)] };
      // At rest: the annotation as validated, nothing sent.
      const rest = await analyzer.measure(kind, annotatedSetWith(kind, before, before), now);
      assertEquals([rest?.validation, prom.asked.length], [undefined, 0], kind);
      const got = await analyzer.measure(kind, annotatedSetWith(kind, after, before), now);
      assertEquals(got?.validation?.refusals.map((r) => r.check), ["bad"], kind);
      assertEquals(prom.asked.length, 2, kind);
    } finally {
      await prom.close();
    }
  }
});

Deno.test("measurer: a status an earlier edgeroll wrote (validatedGeneration) has its queries sent once, then not again", async () => {
  const prom = serve(() => vector(0));
  try {
    const analysis = { checks: [ratioCheck(prom.url)] };
    const old = await measuredVia(prom, setWith(analysis, [], { validatedGeneration: 1 }));
    assertEquals(old?.validation, { queriesHash: hashOf(analysis), refusals: [] });
    assertEquals(prom.asked.length, 1);
    // The plan recorded that hash: the next call sends nothing.
    const recorded = await measuredVia(
      prom,
      setWith(analysis, [], { validatedGeneration: 1, ...validatedAs(analysis) }),
    );
    assertEquals([recorded?.validation, prom.asked.length], [undefined, 1]);
  } finally {
    await prom.close();
  }
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
