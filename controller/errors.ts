/**
 * The controller's own failures, and what any failure means to whoever called it: the HTTP
 * routes map the kind to a status, the queue decides from it whether to retry, the tick
 * reports its reason. The controller knows nothing of HTTP.
 */
import type { z } from "zod";
import { KubeError } from "../kube/errors.ts";

export type FailureKind =
  /** The set asked for does not exist. */
  | "NotFound"
  /** Another writer kept winning the claim; the same call may pass later. */
  | "Conflict"
  /** The API server could not be reached or asked to come back later. */
  | "Unavailable"
  /** A check refused the request (an OTA pre-check, a node the caller may not reach). */
  | "Refused"
  /** The API server refused or failed in a way a retry will not change. */
  | "Upstream"
  /** The input is not valid. */
  | "Invalid"
  /** A bug: nothing the caller can do. */
  | "Internal";

export class ControllerError extends Error {
  override name = "ControllerError";
  constructor(
    readonly kind: "NotFound" | "Conflict" | "Refused" | "Unavailable",
    message: string,
    /** A name for the cause, more precise than the kind (`PreCheckFailed`). */
    readonly reason: string = kind,
  ) {
    super(message);
  }
}

export interface Failure {
  kind: FailureKind;
  reason: string;
  message: string;
  /** True when the same call may succeed later. */
  retryable: boolean;
  /** zod issues of invalid input. */
  issues?: z.core.$ZodIssue[];
}

/**
 * zod's error, known by its name and issues rather than by its class, so that code which never
 * parses with zod (the edge agent) does not load zod to recognise it.
 */
function isZodError(err: unknown): err is z.core.$ZodError {
  return err instanceof Error && err.name === "ZodError" &&
    Array.isArray((err as { issues?: unknown }).issues);
}

/** What an error thrown by the controller, its client or its input means. */
export function failureOf(err: unknown): Failure {
  if (err instanceof ControllerError) {
    return {
      kind: err.kind,
      reason: err.reason,
      message: err.message,
      retryable: err.kind === "Conflict" || err.kind === "Unavailable",
    };
  }
  if (isZodError(err)) {
    return {
      kind: "Invalid",
      reason: "BadRequest",
      message: "invalid input",
      retryable: false,
      issues: err.issues,
    };
  }
  if (err instanceof KubeError) {
    // The API server's answer to us, translated to what our caller can do about it. A 404
    // from it is an upstream failure too: a missing set or pod is reported as NotFound by
    // the code that looked for it, so a 404 reaching here is a path the server does not serve.
    if (err.status === 409) {
      return { kind: "Conflict", reason: err.reason, message: err.message, retryable: true };
    }
    if (err.retryable) {
      return {
        kind: "Unavailable",
        reason: "KubernetesUnavailable",
        message: err.message,
        retryable: true,
      };
    }
    return {
      kind: "Upstream",
      reason: `Kubernetes${err.reason}`,
      message: err.message,
      retryable: false,
    };
  }
  return {
    kind: "Internal",
    reason: "InternalError",
    message: err instanceof Error ? err.message : String(err),
    retryable: false,
  };
}
