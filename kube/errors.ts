/**
 * One typed error for every failed Kubernetes API call, as controller-runtime classes its
 * errors: the HTTP status, the `Status.reason` the API server gave, and whether trying again
 * can help (retryable) or not (terminal, like `reconcile.TerminalError`).
 */

/** The `reason` values of a Kubernetes `Status` that edgeroll acts on. */
export type StatusReason =
  | "AlreadyExists"
  | "Conflict"
  | "NotFound"
  | "Invalid"
  | "BadRequest"
  | "Forbidden"
  | "Unauthorized"
  | "Gone"
  | "Expired"
  | "TooManyRequests"
  | "InternalError"
  | "ServiceUnavailable"
  | "Timeout"
  | "Unreachable"
  | (string & Record<never, never>);

export class KubeError extends Error {
  override name = "KubeError";

  constructor(
    /** HTTP status; 0 when no answer came (connection refused, reset, timeout). */
    readonly status: number,
    readonly reason: StatusReason,
    message: string,
    /** What was asked, e.g. `create pods`, for logs and metrics. */
    readonly operation: string,
    /** Seconds the server asked us to wait (`Retry-After`), if it did. */
    readonly retryAfterSeconds?: number,
    options?: { cause?: unknown; objectName?: string },
  ) {
    super(`${operation}: ${status || "no answer"} ${reason}: ${message}`, options);
    this.objectName = options?.objectName;
  }

  /**
   * The object the Status's `details` name: a 404 for an absent object names it, one for a path
   * the server does not serve (a CRD not installed) names nothing.
   */
  readonly objectName: string | undefined;

  /** 429, 5xx and no answer at all may succeed later; every other status will not. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }

  get terminal(): boolean {
    return !this.retryable;
  }
}

const reasonByStatus: Record<number, StatusReason> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  410: "Gone",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** A Kubernetes `Status` body, as far as we read it. */
interface StatusBody {
  reason?: unknown;
  message?: unknown;
  code?: unknown;
  details?: { name?: unknown };
}

function parseStatusBody(body: unknown): StatusBody {
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body);
      return typeof parsed === "object" && parsed !== null ? parsed : { message: body };
    } catch {
      return { message: body };
    }
  }
  return typeof body === "object" && body !== null ? body as StatusBody : {};
}

/**
 * Turns whatever a client-node call threw into a `KubeError`. client-node throws
 * `ApiException` (`.code`, `.body` as a JSON string, `.headers`) for an HTTP answer and a
 * plain `TypeError("fetch failed")` when there was none.
 */
export function toKubeError(err: unknown, operation: string): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as { code?: unknown; body?: unknown; headers?: Record<string, string> };
  if (typeof e?.code === "number" && e.code >= 100) {
    const status = e.code;
    const body = parseStatusBody(e.body);
    const reason = typeof body.reason === "string" && body.reason !== ""
      ? body.reason
      : reasonByStatus[status] ?? (status >= 500 ? "InternalError" : "Unknown");
    const message = typeof body.message === "string" ? body.message : `HTTP ${status}`;
    const retryAfter = Number(e.headers?.["retry-after"]);
    return new KubeError(
      status,
      reason,
      message,
      operation,
      Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
      {
        cause: err,
        objectName: typeof body.details?.name === "string" ? body.details.name : undefined,
      },
    );
  }
  const message = err instanceof Error
    ? [err.message, (err.cause as Error | undefined)?.message].filter(Boolean).join(": ")
    : String(err);
  return new KubeError(0, "Unreachable", message, operation, undefined, { cause: err });
}

/** True for the error a create gets when the object is already there. */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeError && err.status === 409 && err.reason === "AlreadyExists";
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeError && err.status === 404;
}

/** A 404 naming `name`: that object is absent, where the path itself is served. */
export function isObjectNotFound(err: unknown, name: string): boolean {
  return isNotFound(err) && (err as KubeError).objectName === name;
}

/** A resourceVersion or UID precondition did not hold: someone else moved first. */
export function isConflict(err: unknown): boolean {
  return err instanceof KubeError && err.status === 409 && err.reason !== "AlreadyExists";
}

/**
 * No answer, or the API server (or a proxy before it) unable to serve: the link is down, not the
 * request wrong.
 */
export function isUnreachable(err: unknown): boolean {
  return err instanceof KubeError &&
    (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504);
}
