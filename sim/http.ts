/**
 * The HTTP pieces every handler of the simulator's API shares: the target a request's path
 * names, reading its body and query parameters, and the answers (JSON, a Status for a failure).
 */
import { parse as parseYaml } from "yaml";
import { StoreError } from "./store.ts";
import type { UserInfo } from "./context.ts";
import type { ResourceType } from "./resources.ts";
import { ApiError, toStatus } from "./status.ts";
import { decodeObject, readObjectKinds, UnreadKindError } from "../api/protobuf.ts";
import type { ServerContext } from "./context.ts";

/** The resource a request's path names: a collection, or one object and maybe a subresource. */
export interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
  /** Who asks (absent: an unauthenticated sim); admission webhooks are told. */
  user?: UserInfo;
}

/** A verb answered from the request's body and query: create, update and delete. */
export type BodyVerb = (
  ctx: ServerContext,
  target: Target,
  body: unknown,
  params: URLSearchParams,
) => Response | Promise<Response>;

export const JSON_TYPE = "application/json";

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
  });
}

/** The Warning header with `warnings` added, each as kube-apiserver sends one. */
export function withWarnings(
  headers: Record<string, string>,
  warnings: readonly string[],
): Record<string, string> {
  if (warnings.length === 0) return headers;
  const values = warnings.map((w) => `299 - "${w.replaceAll('"', '\\"')}"`);
  return { ...headers, warning: [headers.warning, ...values].filter(Boolean).join(", ") };
}

/**
 * Warnings given while a request was handled, kept with the error that ended it: kube-apiserver
 * sends an admission webhook's warnings with the answer whatever it is.
 */
const warningsOfErrors = new WeakMap<object, readonly string[]>();

export function warnedError(err: unknown, warnings: readonly string[]): unknown {
  if (warnings.length > 0 && typeof err === "object" && err !== null) {
    warningsOfErrors.set(err, warnings);
  }
  return err;
}

/**
 * The Status that answers `err`, with `Retry-After` when it asks the client to wait and the
 * warnings given before it.
 */
export function failure(err: unknown, target?: Target): Response {
  const status = toStatus(
    err,
    target && {
      name: target.name,
      group: target.type.group || undefined,
      kind: target.type.plural,
    },
  );
  const headers: Record<string, string> = {};
  if (status.details?.retryAfterSeconds) {
    headers["retry-after"] = String(status.details.retryAfterSeconds);
  }
  if (status.code === 500 && !(err instanceof ApiError) && !(err instanceof StoreError)) {
    console.error(JSON.stringify({ level: "error", msg: "sim: internal error", err: String(err) }));
  }
  const warnings = typeof err === "object" && err !== null ? warningsOfErrors.get(err) : undefined;
  return json(status, status.code, withWarnings(headers, warnings ?? []));
}

/** The Success Status that answers a create of pods/eviction or pods/binding. */
export function createdStatus(): Response {
  return json(
    { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 },
    201,
  );
}

export const notFound = () =>
  new ApiError(404, "NotFound", "the server could not find the requested resource");

export const methodNotAllowed = () =>
  new ApiError(
    405,
    "MethodNotAllowed",
    `the server does not allow this method on the requested resource`,
  );

export async function readBody(req: Request): Promise<unknown> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0].trim();
  if (type === "application/vnd.kubernetes.protobuf") {
    try {
      return decodeObject(new Uint8Array(await req.arrayBuffer()));
    } catch (err) {
      if (!(err instanceof UnreadKindError)) {
        throw new ApiError(400, "BadRequest", (err as Error).message);
      }
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the simulator reads protobuf bodies of ${readObjectKinds.join(", ")} only, not ${
          err.kind || "(no kind)"
        }; send JSON (kubectl apply)`,
      );
    }
  }
  const text = await req.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    if (type.endsWith("yaml")) return parseYaml(text);
    throw new ApiError(400, "BadRequest", `the request body is not valid JSON`);
  }
}

export function flag(value: string | null): boolean {
  return value === "true" || value === "1";
}

export function optionalInt(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw)) throw new ApiError(400, "BadRequest", `invalid ${name}: "${raw}"`);
  return Number(raw);
}
