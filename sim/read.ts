/**
 * The read verbs of the Kubernetes API: get and list (selectors, pages and their continue
 * tokens, Tables), and how a stored object is presented to clients of a version: renamed, or
 * converted by its CRD's webhook.
 */
import { type KubeObject, StoreError } from "./store.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { ApiError } from "./status.ts";
import { type IncludeObject, toTable } from "./table.ts";
import type { ServerContext } from "./context.ts";
import { json, optionalInt, type Target } from "./http.ts";

/**
 * The object as clients of `type`'s version see it, where no webhook is needed for it: it is in
 * that version already (a view `views` answered, too), or its kind converts without one.
 */
export function present(type: ResourceType, object: KubeObject): KubeObject {
  const apiVersion = apiVersionOf(type);
  if (!type.fromStorage && object.apiVersion === apiVersion && object.kind === type.kind) {
    return object;
  }
  const conversion = type.custom?.conversion;
  if (conversion && (object.apiVersion ?? conversion.storageVersion) !== apiVersion) {
    throw new Error(`a ${object.apiVersion} ${type.kind} needs its webhook to be ${apiVersion}`);
  }
  const view = type.fromStorage ? type.fromStorage(object) : { ...object };
  view.apiVersion = apiVersion;
  view.kind = type.kind;
  return view;
}

/** `present` for every kind: through the CRD's conversion webhook where it has one. */
export function views(
  ctx: ServerContext,
  type: ResourceType,
  objects: readonly KubeObject[],
): Promise<KubeObject[]> {
  const conversion = type.custom?.conversion;
  if (!conversion) return Promise.resolve(objects.map((o) => present(type, o)));
  return ctx.conversions.convert(conversion, objects, apiVersionOf(type));
}

export async function view(
  ctx: ServerContext,
  type: ResourceType,
  object: KubeObject,
): Promise<KubeObject> {
  return (await views(ctx, type, [object]))[0];
}

/**
 * The objects of `target` its request's selectors pick: the stored ones, or for a kind with a
 * conversion webhook their views, which the selectors judge (a version's selectable fields are
 * its own). The store is read before the call returns, whatever the webhook then takes.
 */
export function selectObjects(
  ctx: ServerContext,
  url: URL,
  target: Target,
): Promise<readonly KubeObject[]> {
  const { type, namespace } = target;
  const filter = selectorFilter(url, type);
  if (!type.custom?.conversion) {
    return Promise.resolve(ctx.store.scan(type.storage, { namespace, filter }));
  }
  return views(ctx, type, ctx.store.scan(type.storage, { namespace }))
    .then((all) => all.filter(filter));
}

/** Whether an object of `type` matches the request's label and field selectors. */
export function selectorFilter(url: URL, type: ResourceType): (object: KubeObject) => boolean {
  const labels = parseLabelSelector(url.searchParams.get("labelSelector"));
  const fields = parseFieldSelector(
    url.searchParams.get("fieldSelector"),
    (field) =>
      field === "metadata.name" || field === "metadata.namespace" ||
      type.fieldLabels.includes(field),
  );
  return (object) =>
    labels(object.metadata.labels) &&
    fields(present(type, object) as unknown as Record<string, unknown>);
}

export function wantsTable(req: Request): boolean {
  return (req.headers.get("accept") ?? "").includes("as=Table");
}

export function includeObject(url: URL): IncludeObject {
  const raw = url.searchParams.get("includeObject") ?? "Metadata";
  if (raw !== "None" && raw !== "Metadata" && raw !== "Object") {
    throw new ApiError(400, "BadRequest", `includeObject must be None, Metadata or Object`);
  }
  return raw;
}

/** `namespace/name`, or `name` when cluster-scoped: the scan's order, which pages resume in. */
export function objectKey(object: KubeObject): string {
  const m = object.metadata;
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

function encodeContinue(resourceVersion: number, key: string): string {
  return btoa(JSON.stringify({ v: "sim/v1", rv: resourceVersion, start: key }));
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const parsed = JSON.parse(atob(token));
    if (typeof parsed.rv === "number" && typeof parsed.start === "string") return parsed;
  } catch { /* answered below */ }
  throw new ApiError(400, "BadRequest", "continue key is not valid");
}

export async function getObject(
  ctx: ServerContext,
  req: Request,
  url: URL,
  target: Target,
): Promise<Response> {
  const object = ctx.store.peek(target.type.storage, target.namespace, target.name!);
  if (!object) {
    throw new StoreError(404, "NotFound", `${target.type.storage} "${target.name}" not found`);
  }
  const presented = await view(ctx, target.type, object);
  if (wantsTable(req)) {
    return json(toTable(target.type, [presented], {
      now: ctx.store.now(),
      includeObject: includeObject(url),
      listMeta: { resourceVersion: object.metadata.resourceVersion },
    }));
  }
  return json(presented);
}

export async function listObjects(
  ctx: ServerContext,
  req: Request,
  url: URL,
  target: Target,
): Promise<Response> {
  const { type } = target;
  const { store } = ctx;
  const params = url.searchParams;
  const resourceVersion = store.resourceVersion;
  const all = await selectObjects(ctx, url, target);
  let start = 0;
  const token = params.get("continue");
  if (token) {
    const { rv, start: after } = decodeContinue(token);
    if (rv < store.oldestResumableVersion(type.storage)) {
      throw new ApiError(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
      );
    }
    start = all.findIndex((o) => objectKey(o) > after);
    if (start < 0) start = all.length;
  }
  const limit = optionalInt(params, "limit") ?? 0;
  const end = limit > 0 ? Math.min(all.length, start + limit) : all.length;
  const page = all.slice(start, end).map((o) => present(type, o));
  const listMeta: Record<string, unknown> = { resourceVersion: String(resourceVersion) };
  if (end < all.length) {
    listMeta.continue = encodeContinue(resourceVersion, objectKey(page[page.length - 1]));
    listMeta.remainingItemCount = all.length - end;
  }
  if (wantsTable(req)) {
    return json(toTable(type, page, {
      now: store.now(),
      includeObject: includeObject(url),
      listMeta,
    }));
  }
  return json({
    kind: `${type.kind}List`,
    apiVersion: apiVersionOf(type),
    metadata: listMeta,
    items: page,
  });
}
