/**
 * One typed HTTP error for routes to throw, and the one `onError` that turns every error
 * into a JSON answer (Hono's `HTTPException` and the error handler of `hono-base.ts`).
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HTTPException } from "hono/http-exception";
import type { z } from "zod";
import { type FailureKind, failureOf } from "../controller/errors.ts";
import type { Logger } from "../lib/log.ts";

export interface ErrorBody {
  error: {
    status: number;
    reason: string;
    message: string;
    /** zod issues of a rejected body or parameter. */
    issues?: z.core.$ZodIssue[];
    /** True when the same request may succeed later. */
    retryable?: boolean;
  };
}

export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: ContentfulStatusCode,
    readonly reason: string,
    message: string,
    readonly extra: { issues?: z.core.$ZodIssue[]; retryable?: boolean } = {},
  ) {
    super(message);
  }
}

export function badRequest(message: string, issues?: z.core.$ZodIssue[]): HttpError {
  return new HttpError(400, "BadRequest", message, { issues });
}

/** What an error means for our caller, whatever threw it. */
export function errorBody(err: unknown): ErrorBody["error"] {
  if (err instanceof HttpError) {
    return { status: err.status, reason: err.reason, message: err.message, ...err.extra };
  }
  if (err instanceof HTTPException) {
    // Thrown by Hono's middleware; 504 is its timeout's, named as kube-apiserver names it.
    const reason = err.status === 504 ? "Timeout" : "HTTPException";
    return { status: err.status, reason, message: err.message };
  }
  const { kind, reason, message, issues, retryable } = failureOf(err);
  return {
    status: statusOf[kind],
    reason,
    message,
    ...(issues ? { issues } : {}),
    ...(retryable ? { retryable } : {}),
  };
}

/** The HTTP status of each kind of controller failure. */
const statusOf: Record<FailureKind, ContentfulStatusCode> = {
  NotFound: 404,
  Conflict: 409,
  Refused: 403,
  Unavailable: 503,
  Upstream: 502,
  Invalid: 400,
  Internal: 500,
};

/** A Hono route path (`/reconcile/:kind/:name`) as a regular expression over request paths. */
function routePattern(path: string): RegExp {
  const parts = path.split("/").map((part) =>
    part === "*"
      ? ".*"
      : part.startsWith(":")
      ? "[^/]+"
      : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  );
  return new RegExp(`^${parts.join("/")}$`);
}

/**
 * Hono's `notFound` for `app`: a path that some route serves with other methods answers 405 with
 * `Allow`, as HTTP has it; any other path 404; both in the same JSON as every error.
 */
export function notFound(app: Hono) {
  return (c: Context): never => {
    const allowed = [
      ...new Set(
        app.routes
          .filter((r) => r.method !== "ALL" && routePattern(r.path).test(c.req.path))
          .map((r) => r.method),
      ),
    ].sort();
    if (allowed.length > 0) {
      c.header("Allow", allowed.join(", "));
      throw new HttpError(
        405,
        "MethodNotAllowed",
        `${c.req.method} ${c.req.path}: this route takes ${allowed.join(", ")}`,
      );
    }
    throw new HttpError(404, "NotFound", `no route ${c.req.method} ${c.req.path}`);
  };
}

export function errorHandler(logger: Logger) {
  return (err: Error, c: Context) => {
    const body = errorBody(err);
    const log = body.status >= 500 ? logger.error : logger.info;
    log("request failed", {
      method: c.req.method,
      path: c.req.path,
      status: body.status,
      reason: body.reason,
      error: err.message,
    });
    return c.json({ error: body } satisfies ErrorBody, body.status as ContentfulStatusCode);
  };
}
