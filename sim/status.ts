/**
 * Kubernetes `Status` failures: the one error type of the server and its JSON shape.
 */
import { StoreError } from "./store.ts";

export type StatusReason =
  | StoreError["reason"]
  | "Unauthorized"
  | "Forbidden"
  | "MethodNotAllowed"
  | "UnsupportedMediaType"
  | "NotAcceptable"
  | "Expired"
  | "TooManyRequests"
  | "InternalError"
  | "ServiceUnavailable"
  | "Timeout";

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly causes: StatusCause[] = [],
    readonly retryAfterSeconds?: number,
    /** The object it is about, as kube-apiserver names it in the Status (kubectl prints it). */
    readonly details: StatusDetails = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
}

export interface StatusObject {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message: string;
  reason: string;
  details?: StatusDetails & { causes?: StatusCause[]; retryAfterSeconds?: number };
  code: number;
}

/** Turns any thrown value into the `Status` kube-apiserver would answer with. */
export function toStatus(err: unknown, details: StatusDetails = {}): StatusObject {
  if (err instanceof ApiError || err instanceof StoreError) {
    const causes = err instanceof ApiError && err.causes.length > 0 ? err.causes : undefined;
    const retryAfterSeconds = err instanceof ApiError ? err.retryAfterSeconds : undefined;
    const about = err instanceof ApiError ? err.details : {};
    details = { ...about, ...details };
    const name = details.name ?? (err instanceof StoreError ? err.objectName : undefined);
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: err.message,
      reason: err.reason,
      details: { ...details, name, causes, retryAfterSeconds },
      code: err.code,
    };
  }
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `Internal error occurred: ${err instanceof Error ? err.message : String(err)}`,
    reason: "InternalError",
    details,
    code: 500,
  };
}

export function successStatus(details: StatusDetails): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details,
  };
}
