/**
 * What any caller may ask of the controller in one request, whoever they are (#13): every
 * limit is checked before authentication and before a body is read, and answers in the
 * app's error shape. The defaults follow kube-apiserver's where it has one.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { timeout } from "hono/timeout";
import { HttpError } from "./errors.ts";

export interface RequestLimits {
  /** Largest request body read; larger answer 413. kube-apiserver's own limit: 3 MiB. */
  bodyBytes: number;
  /** Most CloudEvents in one `/events` batch; more answer 413. */
  events: number;
  /**
   * Largest request line and headers, counted as sent; larger answer 431. Node's default
   * (16 KiB): room for any bearer token, far below what the HTTP server itself takes.
   */
  headerBytes: number;
  /**
   * Longest a request may take to be answered; past it 504, as kube-apiserver's
   * `--request-timeout` (60 s). A reconcile cut short goes on: each step is idempotent.
   */
  requestMs: number;
}

export const defaultLimits: RequestLimits = {
  bodyBytes: 3 * 1024 * 1024,
  events: 1000,
  headerBytes: 16 * 1024,
  requestMs: 60_000,
};

/** The middleware that holds every request to `limits`, outermost first. */
export function limitRequests(limits: RequestLimits): MiddlewareHandler[] {
  const headers: MiddlewareHandler = async (c, next) => {
    const url = new URL(c.req.url);
    // `METHOD target HTTP/1.1\r\n`, then `name: value\r\n` for each header.
    let size = c.req.method.length + url.pathname.length + url.search.length + 12;
    c.req.raw.headers.forEach((value, name) => size += name.length + value.length + 4);
    if (size > limits.headerBytes) {
      throw new HttpError(
        431,
        "RequestHeaderFieldsTooLarge",
        `the request line and headers take ${size} bytes, more than ${limits.headerBytes}`,
      );
    }
    await next();
  };
  return [
    headers,
    timeout(
      limits.requestMs,
      () => new HTTPException(504, { message: `no answer within ${limits.requestMs} ms` }),
    ),
    bodyLimit({
      maxSize: limits.bodyBytes,
      onError: () => {
        throw new HttpError(
          413,
          "PayloadTooLarge",
          `the request body exceeds ${limits.bodyBytes} bytes`,
        );
      },
    }),
  ];
}
