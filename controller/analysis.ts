/**
 * The analysis checks' measurements (ADR 0055): before a set is planned, what its previous status
 * says is due is measured here, each request only to a host on `--analysis-hosts`, bounded in time
 * and size, redirects not followed; when the queries changed (in the spec or the annotation),
 * each is sent once so that a query Prometheus refuses is InvalidSpec before any pod is touched.
 * The answers go to the planner unjudged, in the snapshot: judging them is the engine's.
 */
import {
  Analysis,
  type AnalysisCheck,
  AnalysisStatus,
  dueMeasurements,
  expandCheck,
  hostPort,
  type Measurement,
  queriesHash,
  readAnalysisAnnotation,
} from "../api/analysis.ts";
import type { Snapshot } from "../api/plan.ts";
import { writtenStatus } from "../api/written-status.ts";
import type { SetKind } from "../api/set-ref.ts";
import { forEachConcurrently } from "../lib/concurrently.ts";
import { boundedText } from "../lib/bytes.ts";

/** A measurement's request may take this long; past it, the answer is inconclusive. */
export const measureTimeoutMs = 10_000;
/** An answer above this many bytes is not read: inconclusive. */
export const maxAnswerBytes = 1024 * 1024;
/** Requests in flight at once, for one set. */
const measureConcurrency = 8;

/** A check's credentials, read from the Secret it names (`secretRef`). */
export interface Credentials {
  token?: string;
  username?: string;
  password?: string;
}

export interface AnalyzerOptions {
  /** `host:port`s checks may reach (`serve --analysis-hosts`). */
  allowedHosts: readonly string[];
  /**
   * The Secret `name` in `namespace`, when it carries the credentials label; throws with why
   * not (absent, unlabelled, forbidden), and the measurement is inconclusive with those words.
   */
  readCredentials?: (namespace: string, name: string) => Promise<Credentials>;
  timeoutMs?: number;
}

export interface Analyzer {
  /**
   * What the set's checks measured now, for its snapshot; undefined for a set without checks (a
   * spec the planner cannot read is its to report).
   */
  measure(kind: SetKind, snapshot: Snapshot, now: number): Promise<Snapshot["analysis"]>;
}

/** The set's checks, where its kind carries them; undefined when absent or malformed. */
function analysisOf(snapshot: Snapshot): Analysis | undefined {
  if (snapshot.kind === "AdvancedDaemonSet") {
    const spec = snapshot.set.spec as {
      updateStrategy?: { rollingUpdate?: { analysis?: unknown } };
    } | undefined;
    const raw = spec?.updateStrategy?.rollingUpdate?.analysis;
    if (raw === undefined) return undefined;
    const parsed = Analysis.safeParse(raw);
    return parsed.success ? parsed.data : undefined;
  }
  return readAnalysisAnnotation(snapshot.set.metadata.annotations).value;
}

export function createAnalyzer(options: AnalyzerOptions): Analyzer {
  const allowed = new Set(options.allowedHosts);
  const timeoutMs = options.timeoutMs ?? measureTimeoutMs;
  return {
    async measure(kind, snapshot, now) {
      const analysis = analysisOf(snapshot);
      if (!analysis) return undefined;
      const status = writtenStatus(kind, snapshot) as
        | { daemonSetHash?: string; analysis?: unknown; plan?: { domains?: { name: string }[] } }
        | undefined;
      const previous = AnalysisStatus.safeParse(status?.analysis);
      const standing = previous.success ? previous.data : undefined;
      const due = status?.daemonSetHash
        ? dueMeasurements(analysis, standing, status.daemonSetHash, now)
        : [];
      const namespace = snapshot.set.metadata.namespace ?? "default";
      const ask = (check: AnalysisCheck, domain: string | undefined) =>
        measureOnce(check, domain, { ...options, allowed, timeoutMs, namespace }, now);
      const measurements: Measurement[] = [];
      await forEachConcurrently(due, measureConcurrency, async (d) => {
        measurements.push(await ask(d.check, d.domain));
      });
      // Keyed on the queries, not the generation: an annotation edit does not bump it.
      const hashNow = queriesHash(analysis);
      const queries = analysis.checks.filter((c) => c.prometheus);
      if (standing?.validatedQueriesHash === hashNow || queries.length === 0) {
        return { allowedHosts: [...allowed], measurements };
      }
      // A domain's value only fills a string literal: any one shows whether the query parses.
      const domain = status?.plan?.domains?.[0]?.name ?? "validation";
      const answers: Measurement[] = [];
      await forEachConcurrently(queries, measureConcurrency, async (check) => {
        answers.push(await ask(check, domain));
      });
      const refusals = answers.flatMap((m) =>
        m.refused !== undefined ? [{ check: m.check, message: m.refused }] : []
      );
      // A query unanswered (Prometheus unreachable) is unknown: the hash is not recorded unless
      // another was refused, and the queries are sent again next time.
      const known = refusals.length > 0 || answers.every((m) => m.error === undefined);
      return {
        allowedHosts: [...allowed],
        measurements,
        ...(known ? { validation: { queriesHash: hashNow, refusals } } : {}),
      };
    },
  };
}

interface RequestContext extends AnalyzerOptions {
  allowed: ReadonlySet<string>;
  timeoutMs: number;
  namespace: string;
}

/** One measurement of `check` for `domain`: the answer as read, or why there is none. */
async function measureOnce(
  check: AnalysisCheck,
  domain: string | undefined,
  context: RequestContext,
  now: number,
): Promise<Measurement> {
  const base = {
    check: check.name,
    ...(domain !== undefined ? { domain } : {}),
    at: new Date(now).toISOString(),
  };
  const request = expandCheck(check, domain);
  const url = request.kind === "prometheus"
    ? prometheusUrl(request.address, request.query, now)
    : request.url;
  const host = hostPort(url);
  // The spec's hosts were checked by the planner; a URL whose host the placeholder changed is
  // checked again here, where the request is made.
  if (!host || !context.allowed.has(host)) {
    return { ...base, error: `${host ?? url} is not among the hosts the controller may reach` };
  }
  let headers: Record<string, string>;
  try {
    headers = await authHeaders(check, context);
  } catch (err) {
    return { ...base, error: `credentials: ${err instanceof Error ? err.message : err}` };
  }
  const answer = await getBounded(url, headers, context.timeoutMs);
  if ("error" in answer) return { ...base, error: answer.error };
  return {
    ...base,
    ...(request.kind === "prometheus"
      ? readPrometheus(answer.status, answer.body)
      : readHttp(check, answer.status, answer.body)),
  };
}

function prometheusUrl(address: string, query: string, now: number): string {
  const base = address.endsWith("/") ? address.slice(0, -1) : address;
  const params = new URLSearchParams({ query, time: String(now / 1000) });
  return `${base}/api/v1/query?${params}`;
}

async function authHeaders(check: AnalysisCheck, context: RequestContext) {
  const headers: Record<string, string> = { accept: "application/json" };
  if (!check.secretRef) return headers;
  if (!context.readCredentials) throw new Error("this controller reads no Secrets");
  const found = await context.readCredentials(context.namespace, check.secretRef.name);
  if (found.token) headers.authorization = `Bearer ${found.token}`;
  else if (found.username !== undefined && found.password !== undefined) {
    headers.authorization = `Basic ${btoa(`${found.username}:${found.password}`)}`;
  } else {
    throw new Error(`Secret ${check.secretRef.name} has neither token nor username and password`);
  }
  return headers;
}

/**
 * A GET bounded in time and size, redirects not followed (a redirect could lead off the allowed
 * hosts): the status and the body's text, or why there is none.
 */
async function getBounded(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; body: string } | { error: string }> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, { headers, redirect: "manual", signal });
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      return { error: `answered ${response.status}: redirects are not followed` };
    }
    const body = await boundedText(response, maxAnswerBytes);
    if (body === undefined) return { error: `the answer is above ${maxAnswerBytes} bytes` };
    return { status: response.status, body };
  } catch (err) {
    if (signal.aborted) return { error: `no answer within ${timeoutMs / 1000} s` };
    return { error: `unreachable: ${err instanceof Error ? err.message : err}` };
  }
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** The values of an instant query's answer, one per series; a refused query's words; or why none. */
function readPrometheus(status: number, body: string): Partial<Measurement> {
  const answer = parseJson(body) as {
    status?: string;
    errorType?: string;
    error?: string;
    data?: { resultType?: string; result?: unknown };
  } | undefined;
  if (!answer) return { error: `answered ${status} with no JSON` };
  if (answer.status !== "success") {
    const words = `${answer.errorType ?? "error"}: ${answer.error ?? ""}`.slice(0, 1024);
    // bad_data is the query's fault (400); an execution error (422) or an unavailable server
    // (503) says nothing of the service being judged.
    if (status === 400 && answer.errorType === "bad_data") return { refused: words };
    return { error: `answered ${status}, ${words}` };
  }
  const { resultType, result } = answer.data ?? {};
  if (resultType === "scalar") {
    return { values: [Number((result as [number, string])[1])] };
  }
  if (resultType === "vector") {
    const series = (result as { value: [number, string] }[]).slice(0, 1000);
    return { values: series.map((s) => Number(s.value[1])) };
  }
  return { refused: `an instant query must answer a vector or a scalar, not a ${resultType}` };
}

/** An HTTP check's answer: its status, and with `jsonPath` the field's value (each, for a list). */
function readHttp(check: AnalysisCheck, status: number, body: string): Partial<Measurement> {
  const path = check.http?.jsonPath;
  if (path === undefined || status < 200 || status > 299) return { httpStatus: status };
  const json = parseJson(body);
  if (json === undefined) return { httpStatus: status, error: `the answer is not JSON` };
  let value: unknown = json;
  for (const key of path.split(".")) {
    value = value !== null && typeof value === "object"
      ? (value as Record<string, unknown>)[key]
      : undefined;
  }
  const scalar = (v: unknown) =>
    typeof v === "number" || typeof v === "string" || typeof v === "boolean";
  const values = (Array.isArray(value) ? value : value === undefined ? [] : [value])
    .slice(0, 1000).map((v) => (scalar(v) ? v as number | string | boolean : null));
  return { httpStatus: status, values };
}
