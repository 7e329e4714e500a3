/**
 * For tests: a loopback HTTP server that records each request and answers from a handler,
 * so kube/ is tested through the real @kubernetes/client-node stack.
 */
import type * as k8s from "@kubernetes/client-node";
import { kubeConfigForServer } from "../../kube/config.ts";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | null;
  accept: string | null;
  authorization: string | null;
  body: unknown;
}

/**
 * `chunks`, when given, are the body as sent, piece by piece (`body` is then not sent), as JSON
 * unless `headers` name another content-type.
 */
export type Answer = {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
  chunks?: (string | Uint8Array)[];
};

export interface RecordingServer {
  url: string;
  kubeConfig: k8s.KubeConfig;
  requests: RecordedRequest[];
  stop(): Promise<void>;
}

/** A Kubernetes `Status` failure body. */
export function statusAnswer(code: number, reason: string, message = reason): Answer {
  return {
    status: code,
    body: { kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message },
  };
}

export function startRecordingServer(
  answer: (request: RecordedRequest) => Answer,
): RecordingServer {
  const requests: RecordedRequest[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const text = await req.text();
    const recorded: RecordedRequest = {
      method: req.method,
      path: url.pathname,
      query: url.searchParams,
      contentType: req.headers.get("content-type"),
      accept: req.headers.get("accept"),
      authorization: req.headers.get("authorization"),
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(recorded);
    const { status = 200, body, headers = {}, chunks } = answer(recorded);
    if (!chunks) return Response.json(body, { status, headers });
    const encoder = new TextEncoder();
    const stream = ReadableStream.from(
      chunks.map((chunk) => typeof chunk === "string" ? encoder.encode(chunk) : chunk),
    );
    return new Response(stream, {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    kubeConfig: kubeConfigForServer(url, "test-token"),
    requests,
    stop: () => server.shutdown(),
  };
}
