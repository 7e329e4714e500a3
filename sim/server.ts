/**
 * The simulator's HTTP surface: the Kubernetes REST API over the store (verbs, patch types,
 * subresources, watch streams, Table printing, discovery, OpenAPI) and the `/sim/v1` admin
 * API (faults, stats, node verbs). A plain `(Request) => Promise<Response>` handler, served by
 * `Deno.serve` in `start.ts`.
 */
import { parse as parseYaml } from "yaml";
import { isoSeconds, type KubeObject, type Store, StoreError, type StoreEvent } from "./store.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";
import { ApiError, successStatus, toStatus } from "./status.ts";
import { admit, splitStatus } from "./admission.ts";
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, type Json } from "./patch.ts";
import { serverSideApply } from "./apply.ts";
import { type IncludeObject, toTable } from "./table.ts";
import {
  AGGREGATED_CONTENT_TYPE,
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  KUBERNETES_VERSION,
} from "./discovery.ts";
import { openApiDocument, openApiIndex } from "./openapi.ts";
import { type FaultInjector, FaultsSchema, type RequestStats, type Verb } from "./faults.ts";
import { type ClusterBehaviour, NODE_ACTIONS } from "./behaviour.ts";
import { decodeProtobufObject, isUnsupportedKind } from "./protobuf.ts";
import { authorizeNode } from "./node-authorizer.ts";

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
}

export interface ServerContext {
  store: Store;
  registry: ResourceRegistry;
  /** Bearer tokens the API accepts, and who they are (TokenReview answers with this). */
  tokens: Map<string, UserInfo>;
  faults: FaultInjector;
  stats: RequestStats;
  behaviour: () => ClusterBehaviour;
  /** How often a watch that allows bookmarks gets one. */
  bookmarkIntervalMs: number;
  /** Told when the admin API cuts or heals a node's link, after the behaviour was. */
  onNodeLink?: (node: string, link: "disconnect" | "reconnect") => Promise<void>;
}

interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

const JSON_TYPE = "application/json";
/** Namespaces kube-apiserver refuses to delete. */
const PERMANENT_NAMESPACES = ["default", "kube-system", "kube-public"];
const encoder = new TextEncoder();

function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
  });
}

function failure(err: unknown, target?: Target): Response {
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
  return json(status, status.code, headers);
}

const notFound = () =>
  new ApiError(404, "NotFound", "the server could not find the requested resource");

async function readBody(req: Request): Promise<unknown> {
  const type = (req.headers.get("content-type") ?? "").split(";")[0].trim();
  if (type === "application/vnd.kubernetes.protobuf") {
    try {
      return decodeProtobufObject(new Uint8Array(await req.arrayBuffer()));
    } catch (err) {
      if (!isUnsupportedKind(err)) throw new ApiError(400, "BadRequest", (err as Error).message);
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the simulator decodes protobuf bodies of Namespace, ConfigMap, Secret and ServiceAccount only, not ${err.message}; send JSON (kubectl apply)`,
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

function keyOf(object: KubeObject): string {
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

function flag(value: string | null): boolean {
  return value === "true" || value === "1";
}

function optionalInt(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null || raw === "") return undefined;
  if (!/^-?\d+$/.test(raw)) throw new ApiError(400, "BadRequest", `invalid ${name}: "${raw}"`);
  return Number(raw);
}

function wantsTable(req: Request): boolean {
  return (req.headers.get("accept") ?? "").includes("as=Table");
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** One open watch stream. */
interface OpenWatch {
  close(): void;
}

export class SimServer {
  readonly #watches = new Set<OpenWatch>();
  /** Serialized watch lines, computed once per event and view however many watchers get it. */
  readonly #lines = new WeakMap<StoreEvent, Map<string, Uint8Array>>();

  constructor(private readonly ctx: ServerContext) {}

  get openWatches(): number {
    return this.#watches.size;
  }

  closeWatches(): void {
    for (const watch of [...this.#watches]) watch.close();
  }

  readonly handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname;
    try {
      if (path.startsWith("/sim/v1/")) return await this.#admin(req, path);
      if (path === "/healthz" || path === "/livez" || path === "/readyz") {
        return new Response("ok", { headers: { "content-type": "text/plain" } });
      }
      if (path === "/version") return json(KUBERNETES_VERSION);
      const user = this.#authenticate(req);
      return await this.#api(req, url, path, user);
    } catch (err) {
      return failure(err);
    }
  };

  /**
   * A presented bearer token must be one of ours (401 otherwise). A request without one is
   * served as on kube-apiserver's old insecure port: client-go never sends credentials over
   * plain http, and the simulator listens on loopback only (ADR 0008).
   */
  #authenticate(req: Request): UserInfo | undefined {
    const header = req.headers.get("authorization");
    if (header === null) return undefined;
    const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
    const user = this.ctx.tokens.get(token);
    if (!user) throw new ApiError(401, "Unauthorized", "Unauthorized");
    return user;
  }

  #api(
    req: Request,
    url: URL,
    path: string,
    user: UserInfo | undefined,
  ): Promise<Response> | Response {
    const { registry } = this.ctx;
    const accept = req.headers.get("accept") ?? "";
    if (path === "/api" || path === "/apis") {
      if (accept.includes("as=APIGroupDiscoveryList")) {
        const beta = !/v=v2[;,\s]|v=v2$/.test(accept) && accept.includes("v=v2beta1");
        const body = aggregatedDiscovery(registry, path === "/api");
        if (beta) body.apiVersion = "apidiscovery.k8s.io/v2beta1";
        return json(body, 200, {
          "content-type": beta
            ? AGGREGATED_CONTENT_TYPE.replace("v=v2", "v=v2beta1")
            : AGGREGATED_CONTENT_TYPE,
        });
      }
      return json(path === "/api" ? apiVersions(url.host) : apiGroupList(registry));
    }
    if (path === "/openapi/v3") return json(openApiIndex(registry));
    if (path.startsWith("/openapi/v3/")) {
      const doc = openApiDocument(registry, path.slice("/openapi/v3/".length));
      if (!doc) throw notFound();
      return json(doc);
    }
    const segments = path.split("/").filter((s) => s.length > 0).map(decodeURIComponent);
    let group: string, version: string, rest: string[];
    if (segments[0] === "api" && segments[1] === "v1") {
      [group, version, rest] = ["", "v1", segments.slice(2)];
    } else if (segments[0] === "apis" && segments.length >= 2) {
      if (segments.length === 2) {
        const found = apiGroup(registry, segments[1]);
        if (!found) throw notFound();
        return json(found);
      }
      [group, version, rest] = [segments[1], segments[2], segments.slice(3)];
    } else {
      throw notFound();
    }
    if (rest.length === 0) {
      const list = apiResourceList(registry, group, version);
      if (!list) throw notFound();
      return json(list);
    }
    return this.#resource(req, url, this.#target(group, version, rest), user);
  }

  #target(group: string, version: string, rest: string[]): Target {
    const { registry } = this.ctx;
    const namespacedType = rest[0] === "namespaces" && rest.length >= 3
      ? registry.find(group, version, rest[2])
      : undefined;
    if (namespacedType?.namespaced) {
      if (rest.length > 5) throw notFound();
      return { type: namespacedType, namespace: rest[1], name: rest[3], subresource: rest[4] };
    }
    const type = registry.find(group, version, rest[0]);
    if (!type || rest.length > 3) throw notFound();
    return { type, name: rest[1], subresource: rest[2] };
  }

  #verb(req: Request, url: URL, target: Target): Verb {
    const collection = target.name === undefined;
    switch (req.method) {
      case "GET":
        if (!collection) return "get";
        return flag(url.searchParams.get("watch")) ? "watch" : "list";
      case "POST":
        if (collection || target.subresource) return "create";
        break;
      case "PUT":
        if (!collection) return "update";
        break;
      case "PATCH":
        if (!collection) return "patch";
        break;
      case "DELETE":
        return collection ? "deletecollection" : "delete";
    }
    throw new ApiError(
      405,
      "MethodNotAllowed",
      `the server does not allow this method on the requested resource`,
    );
  }

  async #resource(
    req: Request,
    url: URL,
    target: Target,
    user: UserInfo | undefined,
  ): Promise<Response> {
    const verb = this.#verb(req, url, target);
    const { type, subresource } = target;
    authorizeNode(
      user,
      { verb, ...target, fieldSelector: url.searchParams.get("fieldSelector") },
      this.ctx.store,
    );
    this.ctx.stats.count(verb, subresource ? `${type.plural}/${subresource}` : type.plural);
    const allowed = subresource === "status"
      ? ["get", "update", "patch"].includes(verb) && type.statusSubresource
      : subresource
      ? type.storage === "pods" && (subresource === "eviction" || subresource === "binding")
      : type.verbs.includes(verb);
    if (!allowed) {
      if (subresource) throw notFound();
      throw new ApiError(
        405,
        "MethodNotAllowed",
        `the server does not allow this method on the requested resource`,
      );
    }
    const faults = this.ctx.faults;
    if (faults.current.latencyMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, faults.current.latencyMs));
    }
    const injected = faults.errorFor(verb, type.plural);
    if (injected) return failure(injected, target);
    try {
      switch (verb) {
        case "get":
          return this.#get(req, url, target);
        case "list":
          return this.#list(req, url, target);
        case "watch":
          return this.#watch(req, url, target);
        case "create":
          return this.#create(target, await readBody(req), url.searchParams);
        case "update":
          return this.#update(target, await readBody(req), url.searchParams);
        case "patch":
          return this.#patch(req, target, url.searchParams);
        case "delete":
          return this.#delete(target, await readBody(req), url.searchParams);
        case "deletecollection":
          return this.#deleteCollection(url, target, await readBody(req));
      }
    } catch (err) {
      return failure(err, target);
    }
  }

  /** The object as clients of `type`'s version see it. */
  #present(type: ResourceType, object: KubeObject): KubeObject {
    const apiVersion = apiVersionOf(type);
    if (!type.fromStorage && object.apiVersion === apiVersion && object.kind === type.kind) {
      return object;
    }
    const view = type.fromStorage ? type.fromStorage(object) : { ...object };
    view.apiVersion = apiVersion;
    view.kind = type.kind;
    return view;
  }

  /** The object as stored, from what a client of `type`'s version sent. */
  #toStorage(type: ResourceType, object: KubeObject): KubeObject {
    if (!type.toStorage) return object;
    const stored = type.toStorage(object);
    const storageType = this.ctx.registry.byStorage(type.storage);
    if (storageType) {
      stored.apiVersion = apiVersionOf(storageType);
      stored.kind = storageType.kind;
    }
    return stored;
  }

  #get(req: Request, url: URL, target: Target): Response {
    const object = this.ctx.store.peek(target.type.storage, target.namespace, target.name!);
    if (!object) {
      throw new StoreError(404, "NotFound", `${target.type.storage} "${target.name}" not found`);
    }
    const presented = this.#present(target.type, object);
    if (wantsTable(req)) {
      return json(toTable(target.type, [presented], {
        now: this.ctx.store.now(),
        includeObject: this.#includeObject(url),
        listMeta: { resourceVersion: object.metadata.resourceVersion },
      }));
    }
    return json(presented);
  }

  #includeObject(url: URL): IncludeObject {
    const raw = url.searchParams.get("includeObject") ?? "Metadata";
    if (raw !== "None" && raw !== "Metadata" && raw !== "Object") {
      throw new ApiError(400, "BadRequest", `includeObject must be None, Metadata or Object`);
    }
    return raw;
  }

  #filter(url: URL, type: ResourceType): (object: KubeObject) => boolean {
    const labels = parseLabelSelector(url.searchParams.get("labelSelector"));
    const fields = parseFieldSelector(
      url.searchParams.get("fieldSelector"),
      (field) =>
        field === "metadata.name" || field === "metadata.namespace" ||
        type.fieldLabels.includes(field),
    );
    return (object) =>
      labels(object.metadata.labels) &&
      fields(this.#present(type, object) as unknown as Record<string, unknown>);
  }

  #list(req: Request, url: URL, target: Target): Response {
    const { type, namespace } = target;
    const { store } = this.ctx;
    const params = url.searchParams;
    const all = store.scan(type.storage, { namespace, filter: this.#filter(url, type) });
    const resourceVersion = store.resourceVersion;
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
      start = all.findIndex((o) => keyOf(o) > after);
      if (start < 0) start = all.length;
    }
    const limit = optionalInt(params, "limit") ?? 0;
    const end = limit > 0 ? Math.min(all.length, start + limit) : all.length;
    const page = all.slice(start, end).map((o) => this.#present(type, o));
    const listMeta: Record<string, unknown> = { resourceVersion: String(resourceVersion) };
    if (end < all.length) {
      listMeta.continue = encodeContinue(resourceVersion, keyOf(page[page.length - 1]));
      listMeta.remainingItemCount = all.length - end;
    }
    if (wantsTable(req)) {
      return json(toTable(type, page, {
        now: store.now(),
        includeObject: this.#includeObject(url),
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

  #watchLine(type: ResourceType, eventType: string, event: StoreEvent): Uint8Array {
    let views = this.#lines.get(event);
    if (!views) this.#lines.set(event, views = new Map());
    const key = `${apiVersionOf(type)}|${eventType}`;
    let line = views.get(key);
    if (!line) {
      const object = this.#present(type, event.object);
      views.set(key, line = encoder.encode(JSON.stringify({ type: eventType, object }) + "\n"));
    }
    return line;
  }

  /**
   * A watch stream: newline-delimited JSON events. Without a resourceVersion (or with "0")
   * it starts with the current objects as ADDED; with one, it replays from there, or answers
   * a single ERROR event with a 410 Expired Status when that version is compacted.
   */
  #watch(req: Request, url: URL, target: Target): Response {
    const { type, namespace } = target;
    const { store, faults } = this.ctx;
    const params = url.searchParams;
    const filter = this.#filter(url, type);
    const table = wantsTable(req);
    const includeObject = table ? this.#includeObject(url) : "Object";
    const rvParam = params.get("resourceVersion") ?? "";
    const sendInitial = params.get("sendInitialEvents") === "true";
    const fromNow = rvParam === "" || rvParam === "0" || sendInitial;
    if (!fromNow && !/^\d+$/.test(rvParam)) {
      throw new ApiError(400, "BadRequest", `invalid resourceVersion "${rvParam}"`);
    }
    const timeoutSeconds = optionalInt(params, "timeoutSeconds") ?? 1800;
    const bookmarks = flag(params.get("allowWatchBookmarks"));
    const watches = this.#watches;
    const bookmarkInterval = this.ctx.bookmarkIntervalMs;
    let firstTable = true;
    const render = (eventType: string, event: StoreEvent): Uint8Array => {
      if (!table) return this.#watchLine(type, eventType, event);
      const object = toTable(type, [this.#present(type, event.object)], {
        now: store.now(),
        includeObject,
        listMeta: { resourceVersion: String(event.resourceVersion) },
        omitColumns: !firstTable,
      });
      firstTable = false;
      return encoder.encode(JSON.stringify({ type: eventType, object }) + "\n");
    };
    const bookmark = (annotations?: Record<string, string>) =>
      encoder.encode(
        JSON.stringify({
          type: "BOOKMARK",
          object: {
            kind: type.kind,
            apiVersion: apiVersionOf(type),
            metadata: {
              resourceVersion: String(store.resourceVersion),
              ...(annotations ? { annotations } : {}),
            },
          },
        }) + "\n",
      );
    let handle: OpenWatch | undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        const timers: ReturnType<typeof setTimeout>[] = [];
        let unsubscribe = () => {};
        let closed = false;
        const close = () => {
          if (closed) return;
          flush();
          closed = true;
          unsubscribe();
          timers.forEach((t) => clearTimeout(t));
          watches.delete(handle!);
          try {
            controller.close();
          } catch { /* the client went away first */ }
        };
        handle = { close };
        watches.add(handle);
        // Lines written in one burst of store writes leave as one chunk: far fewer stream
        // writes when a controller changes hundreds of objects in one go.
        let pending: Uint8Array[] = [];
        const flush = () => {
          const lines = pending;
          pending = [];
          if (closed || lines.length === 0) return;
          try {
            controller.enqueue(lines.length === 1 ? lines[0] : concat(lines));
          } catch {
            close();
          }
        };
        const send = (line: Uint8Array) => {
          if (closed) return;
          if (pending.length === 0) queueMicrotask(flush);
          pending.push(line);
        };
        // Objects that matched the selectors when last seen: leaving the selection is a DELETED.
        const matching = new Set<string>();
        const onEvent = (event: StoreEvent) => {
          const key = keyOf(event.object);
          const matches = filter(event.object);
          if (matches) {
            if (event.type === "DELETED") matching.delete(key);
            else matching.add(key);
            send(render(event.type, event));
          } else if (matching.delete(key)) {
            send(render("DELETED", event));
          }
        };
        for (const object of store.scan(type.storage, { namespace, filter })) {
          matching.add(keyOf(object));
          if (fromNow) {
            send(render("ADDED", {
              type: "ADDED",
              resource: type.storage,
              object,
              resourceVersion: Number(object.metadata.resourceVersion),
            }));
          }
        }
        if (sendInitial && bookmarks) send(bookmark({ "k8s.io/initial-events-end": "true" }));
        try {
          unsubscribe = store.watch(
            type.storage,
            { namespace, resourceVersion: fromNow ? undefined : Number(rvParam) },
            onEvent,
          );
        } catch (err) {
          if (!(err instanceof StoreError) || err.code !== 410) throw err;
          const status = toStatus(new ApiError(410, "Expired", err.message));
          send(encoder.encode(JSON.stringify({ type: "ERROR", object: status }) + "\n"));
          close();
          return;
        }
        timers.push(setTimeout(close, timeoutSeconds * 1000));
        const drop = faults.current.watchDropSeconds;
        if (drop) timers.push(setTimeout(close, drop * 1000));
        if (bookmarks) {
          timers.push(setInterval(() => send(bookmark()), bookmarkInterval));
        }
      },
      cancel() {
        handle?.close();
      },
    });
    return new Response(body, {
      headers: { "content-type": JSON_TYPE, "transfer-encoding": "chunked" },
    });
  }

  /** Common checks of a body sent to create or replace an object of `target`. */
  #normalize(target: Target, body: unknown): KubeObject {
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
    if (target.name !== undefined && !target.subresource || target.subresource === "status") {
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

  #requireNamespace(target: Target): void {
    if (!target.type.namespaced) return;
    const ns = this.ctx.store.tryGet("namespaces", undefined, target.namespace!);
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

  #create(target: Target, body: unknown, params: URLSearchParams): Response {
    const { type } = target;
    if (target.subresource === "eviction") return this.#evict(target, body);
    if (target.subresource === "binding") return this.#bind(target, body);
    if (type.storage === "bindings") {
      const name = (body as { metadata?: { name?: string } } | undefined)?.metadata?.name;
      return this.#bind({ ...target, name }, body);
    }
    if (type.storage === "tokenreviews.authentication.k8s.io") return this.#tokenReview(body);
    const object = this.#toStorage(type, this.#normalize(target, body));
    this.#requireNamespace(target);
    return this.#admitAndStore(type, object, undefined, params);
  }

  #update(target: Target, body: unknown, params: URLSearchParams): Response {
    const { type } = target;
    const { store } = this.ctx;
    const incoming = this.#toStorage(type, this.#normalize(target, body));
    const stored = store.get(type.storage, target.namespace, target.name!);
    const next = splitStatus(type, target.subresource, incoming, stored);
    return this.#admitAndStore(type, next, stored, params);
  }

  async #patch(req: Request, target: Target, params: URLSearchParams): Promise<Response> {
    const { type } = target;
    const { store } = this.ctx;
    const contentType = (req.headers.get("content-type") ?? "").split(";")[0].trim();
    const text = await req.text();
    const stored = store.tryGet(type.storage, target.namespace, target.name!);
    if (contentType === "application/apply-patch+yaml") {
      return this.#apply(target, text, stored, params);
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
    const current = this.#present(type, stored) as unknown as Json;
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
    object.metadata ??= { name: stored.metadata.name };
    object.metadata.name = stored.metadata.name;
    object.metadata.namespace = stored.metadata.namespace;
    const next = splitStatus(type, target.subresource, this.#toStorage(type, object), stored);
    return this.#admitAndStore(type, next, stored, params);
  }

  #apply(
    target: Target,
    text: string,
    stored: KubeObject | undefined,
    params: URLSearchParams,
  ): Response {
    const { type } = target;
    const { store } = this.ctx;
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
    const config = this.#normalize(target, body);
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
      this.#requireNamespace(target);
      const object = this.#toStorage(type, serverSideApply(undefined, config, options));
      return this.#admitAndStore(type, object, undefined, params);
    }
    const live = this.#present(type, stored);
    const merged = this.#toStorage(type, serverSideApply(live, config, options));
    merged.metadata.resourceVersion = config.metadata.resourceVersion ??
      stored.metadata.resourceVersion;
    const next = splitStatus(type, target.subresource, merged, stored);
    if (target.subresource === "status") {
      next.metadata.managedFields = merged.metadata.managedFields;
    }
    return this.#admitAndStore(type, next, stored, params);
  }

  /**
   * Admits `next` against what is `stored` (nothing: a create) and stores it, or only answers
   * on a dry run: 201 for a create, 200 for an update, with the field-validation warnings.
   */
  #admitAndStore(
    type: ResourceType,
    next: KubeObject,
    stored: KubeObject | undefined,
    params: URLSearchParams,
  ): Response {
    const { store } = this.ctx;
    const warnings = this.#fieldValidation(type, admit(type, next, stored, store.now()), params);
    const status = stored ? 200 : 201;
    if (params.get("dryRun")) return json(this.#present(type, next), status, warnings);
    const saved = stored ? store.update(type.storage, next) : store.create(type.storage, next);
    return json(this.#present(type, saved), status, warnings);
  }

  /**
   * `fieldValidation`: Strict (kubectl's default) refuses unknown fields, Warn (the server's
   * default) answers with Warning headers, Ignore drops them silently. Unknown fields are
   * known only for custom resources, which have a schema here.
   */
  #fieldValidation(
    type: ResourceType,
    unknown: string[],
    params: URLSearchParams,
  ): Record<string, string> {
    const mode = params.get("fieldValidation") ?? "Warn";
    if (!["Strict", "Warn", "Ignore"].includes(mode)) {
      throw new ApiError(
        400,
        "BadRequest",
        `fieldValidation must be Strict, Warn or Ignore, got "${mode}"`,
      );
    }
    if (unknown.length === 0 || mode === "Ignore") return {};
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
    return { warning: fields.map((f) => `299 - "${f.replaceAll('"', '\\"')}"`).join(", ") };
  }

  #deleteOptions(body: unknown, params: URLSearchParams) {
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

  #delete(target: Target, body: unknown, params: URLSearchParams): Response {
    const { type } = target;
    const { store } = this.ctx;
    const options = this.#deleteOptions(body, params);
    if (type.storage === "namespaces" && PERMANENT_NAMESPACES.includes(target.name!)) {
      throw new ApiError(
        403,
        "Forbidden",
        `namespaces "${target.name}" is forbidden: this namespace may not be deleted`,
      );
    }
    if (options.dryRun) {
      return json(this.#present(type, store.get(type.storage, target.namespace, target.name!)));
    }
    const { object, removed } = store.delete(type.storage, target.namespace, target.name!, options);
    // Like kube-apiserver: pods and custom resources answer with the object, others with a
    // Status once the object is gone.
    if (!removed || type.storage === "pods" || type.custom) {
      return json(this.#present(type, object));
    }
    return json(successStatus({
      name: object.metadata.name,
      group: type.group || undefined,
      kind: type.plural,
      uid: object.metadata.uid,
    } as Record<string, string>));
  }

  #deleteCollection(url: URL, target: Target, body: unknown): Response {
    const { type } = target;
    const { store } = this.ctx;
    const options = this.#deleteOptions(body, url.searchParams);
    const victims = store.scan(type.storage, {
      namespace: target.namespace,
      filter: this.#filter(url, type),
    });
    const items: KubeObject[] = [];
    for (const victim of victims) {
      if (options.dryRun) {
        items.push(this.#present(type, victim));
        continue;
      }
      try {
        const { object } = store.delete(
          type.storage,
          victim.metadata.namespace,
          victim.metadata.name,
          options,
        );
        items.push(this.#present(type, object));
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
  #evict(target: Target, body: unknown): Response {
    const eviction = (body ?? {}) as { deleteOptions?: unknown; metadata?: { name?: string } };
    if (eviction.metadata?.name && eviction.metadata.name !== target.name) {
      throw new ApiError(400, "BadRequest", "name in URL does not match name in Eviction object");
    }
    const options = this.#deleteOptions(eviction.deleteOptions, new URLSearchParams());
    this.ctx.store.delete("pods", target.namespace, target.name!, options);
    return json(
      { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 },
      201,
    );
  }

  /** `pods/binding`: what the scheduler posts to put a pod on a node. */
  #bind(target: Target, body: unknown): Response {
    const { store } = this.ctx;
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
    return json(
      { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 },
      201,
    );
  }

  #tokenReview(body: unknown): Response {
    const review = (body ?? {}) as { spec?: { token?: string; audiences?: string[] } };
    const token = review.spec?.token;
    if (!token) {
      throw new ApiError(
        422,
        "Invalid",
        `TokenReview.authentication.k8s.io "" is invalid: spec.token: Required value`,
      );
    }
    const user = this.ctx.tokens.get(token);
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

  async #admin(req: Request, path: string): Promise<Response> {
    const { store, faults, stats } = this.ctx;
    if (path === "/sim/v1/faults" && req.method === "GET") return json(faults.current);
    if (path === "/sim/v1/faults" && req.method === "PUT") {
      let body: unknown;
      try {
        body = JSON.parse(await req.text());
      } catch {
        return json({ error: "the body is not valid JSON", issues: [] }, 400);
      }
      const parsed = FaultsSchema.safeParse(body);
      if (!parsed.success) {
        return json({ error: "invalid faults", issues: parsed.error.issues }, 400);
      }
      faults.set(parsed.data);
      if (parsed.data.speed !== undefined) this.ctx.behaviour().setSpeed?.(parsed.data.speed);
      if (parsed.data.compact) {
        // Every watcher must come back, and finds its resourceVersion gone.
        store.compact();
        this.closeWatches();
      }
      return json(parsed.data);
    }
    if (path === "/sim/v1/stats" && req.method === "GET") {
      const objects: Record<string, number> = {};
      for (const resource of store.resources()) objects[resource] = store.count(resource);
      return json({
        requests: { byVerb: stats.byVerb, byResource: stats.byResource },
        writes: store.writes,
        watches: this.openWatches,
        objects: { total: store.count(), byResource: objects },
        resourceVersion: String(store.resourceVersion),
      });
    }
    const m = /^\/sim\/v1\/nodes\/([^/]+)\/([a-z]+)$/.exec(path);
    if (m && req.method === "POST" && m[2] in NODE_ACTIONS) {
      const node = decodeURIComponent(m[1]);
      store.get("nodes", undefined, node);
      const method = NODE_ACTIONS[m[2] as keyof typeof NODE_ACTIONS];
      const behaviour = this.ctx.behaviour();
      const action = behaviour[method] as ((node: string) => void) | undefined;
      if (!action) {
        throw new ApiError(
          503,
          "ServiceUnavailable",
          `the simulated cluster does not support ${m[2]}`,
        );
      }
      action.call(behaviour, node);
      if (m[2] === "disconnect" || m[2] === "reconnect") await this.ctx.onNodeLink?.(node, m[2]);
      return json({ node, action: m[2] });
    }
    throw notFound();
  }
}
