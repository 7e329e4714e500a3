/**
 * The write verbs of the Kubernetes API: create, update, the patch types and server-side
 * apply, each admitted and stored (or only answered, on a dry run), with field validation; and
 * the creates that are not stored as sent: pods/binding and Bindings (they set a pod's node),
 * TokenReviews (answered, never stored); pods/eviction is passed to delete.ts.
 */
import { parse as parseYaml } from "yaml";
import { isoSeconds, type KubeObject, StoreError } from "./store.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { ApiError } from "./status.ts";
import { admit, splitStatus } from "./admission.ts";
import { AdmissionWebhooks } from "./admission-webhooks.ts";
import { applyDefaults } from "./validation.ts";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type Json } from "./patch.ts";
import { serverSideApply } from "./apply.ts";
import type { ServerContext } from "./context.ts";
import {
  type BodyVerb,
  createdStatus,
  flag,
  json,
  type Target,
  warnedError,
  withWarnings,
} from "./http.ts";
import { view } from "./read.ts";
import { alignKeys } from "./conversion.ts";
import { evict } from "./delete.ts";

/** Common checks of a body sent to create or replace an object of `target`. */
function normalize(target: Target, body: unknown): KubeObject {
  const { type } = target;
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "BadRequest", "the body of the request must be an object");
  }
  const object = structuredClone(body) as KubeObject;
  object.metadata ??= { name: "" };
  if (object.kind !== undefined && object.kind !== type.kind) {
    throw new ApiError(
      400,
      "BadRequest",
      `the API version in the data (${object.apiVersion}) does not match the expected API version (${
        apiVersionOf(type)
      }) or kind ${object.kind} is not ${type.kind}`,
    );
  }
  object.apiVersion = apiVersionOf(type);
  object.kind = type.kind;
  if (type.namespaced) {
    const ns = object.metadata.namespace;
    if (ns && ns !== target.namespace) {
      throw new ApiError(
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    }
    object.metadata.namespace = target.namespace;
  } else {
    delete object.metadata.namespace;
  }
  if (
    target.name !== undefined && !target.subresource || target.subresource === "status" ||
    target.subresource === "resize"
  ) {
    if (object.metadata.name && object.metadata.name !== target.name) {
      throw new ApiError(
        400,
        "BadRequest",
        `the name of the object (${object.metadata.name}) does not match the name on the URL (${target.name})`,
      );
    }
    object.metadata.name = target.name!;
  }
  return object;
}

/**
 * The object as stored, from what a client of `type`'s version sent: renamed, or converted by
 * the CRD's webhook (an update's keys put back in the stored object's order, so that a round
 * trip through the webhook changes neither generation nor resourceVersion).
 */
async function toStorage(
  ctx: ServerContext,
  type: ResourceType,
  object: KubeObject,
  stored: KubeObject | undefined,
): Promise<KubeObject> {
  const conversion = type.custom?.conversion;
  if (conversion) {
    const [converted] = await ctx.conversions.convert(
      conversion,
      [object],
      conversion.storageVersion,
    );
    return stored && converted !== object ? alignKeys(converted, stored) as KubeObject : converted;
  }
  if (!type.toStorage) return object;
  const storable = type.toStorage(object);
  const storageType = ctx.registry.byStorage(type.storage);
  if (storageType) {
    storable.apiVersion = apiVersionOf(storageType);
    storable.kind = storageType.kind;
  }
  return storable;
}

function requireNamespace(ctx: ServerContext, target: Target): void {
  if (!target.type.namespaced) return;
  const ns = ctx.store.tryGet("namespaces", undefined, target.namespace!);
  if (!ns) {
    throw new StoreError(404, "NotFound", `namespaces "${target.namespace}" not found`);
  }
  if (ns.metadata.deletionTimestamp) {
    throw new ApiError(
      403,
      "Forbidden",
      `${target.type.plural} "${
        target.name ?? ""
      }" is forbidden: unable to create new content in namespace ${target.namespace} because it is being terminated`,
    );
  }
}

export const createObject: BodyVerb = (ctx, target, body, params) => {
  const { type } = target;
  if (target.subresource === "eviction") return evict(ctx, target, body);
  if (target.subresource === "binding") return bind(ctx, target, body);
  if (type.storage === "bindings") {
    const name = (body as { metadata?: { name?: string } } | undefined)?.metadata?.name;
    return bind(ctx, { ...target, name }, body);
  }
  if (type.storage === "tokenreviews.authentication.k8s.io") return tokenReview(ctx, body);
  const object = normalize(target, body);
  requireNamespace(ctx, target);
  return admitAndStore(ctx, target, object, undefined, params);
};

/**
 * The object changed while the write awaited its conversion (a webhook's answer; for other
 * kinds a turn of the event loop): the write starts again from what is stored now, as
 * kube-apiserver's GuaranteedUpdate does; a 409 if it keeps happening.
 */
class StaleRead extends StoreError {}

async function retried(write: () => Promise<Response>): Promise<Response> {
  for (let attempt = 1;; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof StaleRead) || attempt === 5) throw err;
    }
  }
}

export const updateObject: BodyVerb = (ctx, target, body, params) =>
  retried(async () => {
    const { type } = target;
    const incoming = normalize(target, body);
    const stored = ctx.store.get(type.storage, target.namespace, target.name!);
    const old = await view(ctx, type, stored);
    const next = splitStatus(type, target.subresource, incoming, old);
    return admitAndStore(ctx, target, next, { stored, old }, params);
  });

export async function patchObject(
  ctx: ServerContext,
  req: Request,
  target: Target,
  params: URLSearchParams,
): Promise<Response> {
  const contentType = (req.headers.get("content-type") ?? "").split(";")[0].trim();
  const text = await req.text();
  return await retried(() => patchOnce(ctx, target, contentType, text, params));
}

async function patchOnce(
  ctx: ServerContext,
  target: Target,
  contentType: string,
  text: string,
  params: URLSearchParams,
): Promise<Response> {
  const { type } = target;
  const stored = ctx.store.tryGet(type.storage, target.namespace, target.name!);
  if (contentType === "application/apply-patch+yaml") {
    return apply(ctx, target, text, stored, params);
  }
  if (!stored) {
    throw new StoreError(404, "NotFound", `${type.storage} "${target.name}" not found`);
  }
  let patch: Json;
  try {
    patch = JSON.parse(text);
  } catch {
    throw new ApiError(400, "BadRequest", "the patch is not valid JSON");
  }
  const old = await view(ctx, type, stored);
  const current = old as unknown as Json;
  let patched: Json;
  switch (contentType) {
    case "application/json-patch+json":
      patched = applyJsonPatch(current, patch);
      break;
    case "application/merge-patch+json":
      patched = applyMergePatch(current, patch);
      break;
    case "application/strategic-merge-patch+json":
      if (type.custom) {
        throw new ApiError(
          415,
          "UnsupportedMediaType",
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
        );
      }
      patched = applyStrategicMergePatch(current, patch);
      break;
    default:
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml${
          type.custom ? "" : ", application/strategic-merge-patch+json"
        }`,
      );
  }
  const object = patched as unknown as KubeObject;
  // A uid the patch sets is a precondition, as kube-apiserver's update checks it (status too).
  const uid = object.metadata?.uid;
  if (uid && uid !== stored.metadata.uid) {
    throw new StoreError(
      409,
      "Conflict",
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${stored.metadata.uid}`,
    );
  }
  object.metadata ??= { name: stored.metadata.name };
  object.metadata.name = stored.metadata.name;
  object.metadata.namespace = stored.metadata.namespace;
  const next = splitStatus(type, target.subresource, object, old);
  return admitAndStore(ctx, target, next, { stored, old }, params);
}

/** Server-side apply: a patch of type `application/apply-patch+yaml`. */
async function apply(
  ctx: ServerContext,
  target: Target,
  text: string,
  stored: KubeObject | undefined,
  params: URLSearchParams,
): Promise<Response> {
  const { type } = target;
  const { store } = ctx;
  const manager = params.get("fieldManager");
  if (!manager) {
    throw new ApiError(
      422,
      "Invalid",
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
  }
  let body: unknown;
  try {
    body = parseYaml(text);
  } catch (err) {
    throw new ApiError(400, "BadRequest", `error decoding YAML: ${(err as Error).message}`);
  }
  const config = normalize(target, body);
  const time = isoSeconds(store.now());
  const options = {
    manager,
    force: flag(params.get("force")),
    time,
    subresource: target.subresource,
  };
  if (!stored) {
    if (target.subresource) {
      throw new StoreError(404, "NotFound", `${type.storage} "${target.name}" not found`);
    }
    requireNamespace(ctx, target);
    const object = serverSideApply(undefined, config, options);
    return admitAndStore(ctx, target, object, undefined, params);
  }
  const old = await view(ctx, type, stored);
  const merged = serverSideApply(old, config, options);
  merged.metadata.resourceVersion = config.metadata.resourceVersion ??
    stored.metadata.resourceVersion;
  const next = splitStatus(type, target.subresource, merged, old);
  if (target.subresource === "status") {
    next.metadata.managedFields = merged.metadata.managedFields;
  }
  return admitAndStore(ctx, target, next, { stored, old }, params);
}

/**
 * Admits `next` against the `old` object (as the request's version sees what is `stored`;
 * nothing: a create), as kube-apiserver admits in the request's version: a custom resource's
 * schema defaults, the mutating admission webhooks, the type's own defaults and validation, the
 * validating admission webhooks; then stores it in the storage version, or only answers on a
 * dry run: 201 for a create, 200 for an update, with the field-validation and webhook warnings.
 * The answer is in the request's version.
 */
async function admitAndStore(
  ctx: ServerContext,
  target: Target,
  next: KubeObject,
  existing: { stored: KubeObject; old: KubeObject } | undefined,
  params: URLSearchParams,
): Promise<Response> {
  const { store } = ctx;
  const { type } = target;
  // A new object's uid comes before admission, as kube-apiserver's: a Job's selector names it.
  if (!existing) next.metadata.uid = crypto.randomUUID();
  if (type.custom?.schema) applyDefaults(next, type.custom.schema);
  const request = {
    type,
    operation: existing ? "UPDATE" as const : "CREATE" as const,
    oldObject: existing?.old,
    namespace: next.metadata.namespace,
    name: next.metadata.name,
    subresource: target.subresource,
    user: target.user,
    dryRun: Boolean(params.get("dryRun")),
  };
  const webhooks = new AdmissionWebhooks(store, ctx.registry, ctx.conversions, ctx.webhooks);
  const mutated = await webhooks.mutate({ ...request, object: next });
  const admitted = mutated.object;
  const warnings: string[] = [];
  try {
    warnings.push(
      ...fieldValidation(
        type,
        admit(type, admitted, existing?.old, store.now(), target.subresource),
        params,
      ),
      ...mutated.warnings,
      ...await webhooks.validate({ ...request, object: admitted }),
    );
  } catch (err) {
    throw warnedError(err, mutated.warnings);
  }
  const status = existing ? 200 : 201;
  const storable = await toStorage(ctx, type, admitted, existing?.stored);
  if (existing) {
    const { namespace, name, resourceVersion } = existing.stored.metadata;
    const now = store.peek(type.storage, namespace, name)?.metadata.resourceVersion;
    if (now !== resourceVersion) {
      throw new StaleRead(409, "Conflict", `${type.storage} "${name}" changed while converted`);
    }
  }
  const saved = params.get("dryRun")
    ? storable
    : existing
    ? store.update(type.storage, storable)
    : store.create(type.storage, storable, next.metadata.uid);
  return json(await view(ctx, type, saved), status, withWarnings({}, warnings));
}

/**
 * `fieldValidation`: Strict (kubectl's default) refuses unknown fields, Warn (the server's
 * default) answers with warnings, Ignore drops them silently. Unknown fields are known only
 * for custom resources, which have a schema here.
 */
function fieldValidation(
  type: ResourceType,
  unknown: string[],
  params: URLSearchParams,
): string[] {
  const mode = params.get("fieldValidation") ?? "Warn";
  if (!["Strict", "Warn", "Ignore"].includes(mode)) {
    throw new ApiError(
      400,
      "BadRequest",
      `fieldValidation must be Strict, Warn or Ignore, got "${mode}"`,
    );
  }
  if (unknown.length === 0 || mode === "Ignore") return [];
  const fields = unknown.map((f) => `unknown field "${f}"`);
  if (mode === "Strict") {
    throw new ApiError(
      400,
      "BadRequest",
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: strict decoding error: ${
        fields.join(", ")
      }`,
    );
  }
  return fields;
}

/** `pods/binding`: what the scheduler posts to put a pod on a node. */
function bind(ctx: ServerContext, target: Target, body: unknown): Response {
  const { store } = ctx;
  const binding = (body ?? {}) as { target?: { kind?: string; name?: string } };
  const node = binding.target?.name;
  if (!node) {
    throw new ApiError(
      422,
      "Invalid",
      `Binding "${target.name}" is invalid: target.name: Required value`,
    );
  }
  const pod = store.get("pods", target.namespace, target.name!);
  const spec = pod.spec as { nodeName?: string };
  if (spec.nodeName) {
    throw new ApiError(
      409,
      "Conflict",
      `Operation cannot be fulfilled on pods/binding "${target.name}": pod ${target.name} is already assigned to node "${spec.nodeName}"`,
    );
  }
  spec.nodeName = node;
  const status = (pod.status ??= {}) as { conditions?: Record<string, string>[] };
  status.conditions = [
    ...(status.conditions ?? []).filter((c) => c.type !== "PodScheduled"),
    { type: "PodScheduled", status: "True", lastTransitionTime: isoSeconds(store.now()) },
  ];
  store.update("pods", pod);
  return createdStatus();
}

/** A TokenReview: who one of the API's bearer tokens is. Stored nowhere. */
function tokenReview(ctx: ServerContext, body: unknown): Response {
  const review = (body ?? {}) as { spec?: { token?: string; audiences?: string[] } };
  const token = review.spec?.token;
  if (!token) {
    throw new ApiError(
      422,
      "Invalid",
      `TokenReview.authentication.k8s.io "" is invalid: spec.token: Required value`,
    );
  }
  const user = ctx.tokens.get(token);
  return json({
    kind: "TokenReview",
    apiVersion: "authentication.k8s.io/v1",
    metadata: { creationTimestamp: null },
    spec: review.spec,
    status: user
      ? { authenticated: true, user, audiences: review.spec?.audiences ?? [] }
      : { user: {}, error: "invalid bearer token" },
  }, 201);
}
