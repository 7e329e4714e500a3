/**
 * The delete verbs of the Kubernetes API: delete, deletecollection and pods/eviction, with
 * their DeleteOptions (from the query or the body).
 */
import { type KubeObject, StoreError } from "./store.ts";
import { apiVersionOf } from "./resources.ts";
import { ApiError, successStatus } from "./status.ts";
import type { ServerContext } from "./context.ts";
import { type BodyVerb, createdStatus, json, optionalInt, type Target } from "./http.ts";
import { present, selectObjects, view } from "./read.ts";
import { withMetadata } from "./conversion.ts";
import type { ResourceType } from "./resources.ts";

/** Namespaces kube-apiserver refuses to delete. */
const PERMANENT_NAMESPACES = ["default", "kube-system", "kube-public"];

function deleteOptions(body: unknown, params: URLSearchParams) {
  const options = (typeof body === "object" && body !== null ? body : {}) as {
    gracePeriodSeconds?: number;
    propagationPolicy?: string;
    preconditions?: { uid?: string; resourceVersion?: string };
    dryRun?: string[];
  };
  const grace = optionalInt(params, "gracePeriodSeconds") ?? options.gracePeriodSeconds;
  const policy = params.get("propagationPolicy") ?? options.propagationPolicy;
  if (policy !== undefined && !["Orphan", "Background", "Foreground"].includes(policy)) {
    throw new ApiError(
      422,
      "Invalid",
      `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
    );
  }
  return {
    gracePeriodSeconds: grace,
    propagationPolicy: policy as "Orphan" | "Background" | "Foreground" | undefined,
    preconditions: options.preconditions,
    dryRun: Boolean(params.get("dryRun")) || (options.dryRun?.length ?? 0) > 0,
  };
}

/**
 * The answer to a delete, in the request's version: for a kind with a conversion webhook, the
 * view converted `before` with the metadata the delete left (all a delete changes), as
 * kube-apiserver converts before it deletes.
 */
function deleted(type: ResourceType, before: KubeObject | undefined, object: KubeObject) {
  return before && type.custom?.conversion ? withMetadata(before, object) : present(type, object);
}

export const deleteObject: BodyVerb = async (ctx, target, body, params) => {
  const { type } = target;
  const { store } = ctx;
  const options = deleteOptions(body, params);
  if (type.storage === "namespaces" && PERMANENT_NAMESPACES.includes(target.name!)) {
    throw new ApiError(
      403,
      "Forbidden",
      `namespaces "${target.name}" is forbidden: this namespace may not be deleted`,
    );
  }
  if (options.dryRun) {
    return json(await view(ctx, type, store.get(type.storage, target.namespace, target.name!)));
  }
  const stored = store.peek(type.storage, target.namespace, target.name!);
  const before = stored && type.custom?.conversion ? await view(ctx, type, stored) : undefined;
  const { object, removed } = store.delete(type.storage, target.namespace, target.name!, options);
  // Like kube-apiserver: pods and custom resources answer with the object, others with a
  // Status once the object is gone.
  if (!removed || type.storage === "pods" || type.custom) {
    return json(deleted(type, before, object));
  }
  return json(successStatus({
    name: object.metadata.name,
    group: type.group || undefined,
    kind: type.plural,
    uid: object.metadata.uid,
  } as Record<string, string>));
};

export async function deleteCollection(
  ctx: ServerContext,
  url: URL,
  target: Target,
  body: unknown,
): Promise<Response> {
  const { type } = target;
  const { store } = ctx;
  const options = deleteOptions(body, url.searchParams);
  const victims = await selectObjects(ctx, url, target);
  const items: KubeObject[] = [];
  for (const victim of victims) {
    if (options.dryRun) {
      items.push(present(type, victim));
      continue;
    }
    try {
      const { object } = store.delete(
        type.storage,
        victim.metadata.namespace,
        victim.metadata.name,
        options,
      );
      items.push(deleted(type, victim, object));
    } catch (err) {
      if (!(err instanceof StoreError) || err.code !== 404) throw err;
    }
  }
  return json({
    kind: `${type.kind}List`,
    apiVersion: apiVersionOf(type),
    metadata: { resourceVersion: String(store.resourceVersion) },
    items,
  });
}

/** `pods/eviction`: no PodDisruptionBudgets exist here, so an eviction is a delete. */
export function evict(ctx: ServerContext, target: Target, body: unknown): Response {
  const eviction = (body ?? {}) as { deleteOptions?: unknown; metadata?: { name?: string } };
  if (eviction.metadata?.name && eviction.metadata.name !== target.name) {
    throw new ApiError(400, "BadRequest", "name in URL does not match name in Eviction object");
  }
  const options = deleteOptions(eviction.deleteOptions, new URLSearchParams());
  ctx.store.delete("pods", target.namespace, target.name!, options);
  return createdStatus();
}
