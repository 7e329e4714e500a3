/**
 * Watch streams: newline-delimited JSON events of one resource, as kube-apiserver sends them
 * (the current objects, or a replay from a resourceVersion; selectors, Tables, bookmarks, 410
 * Expired), and the set of them a server has open.
 */
import { type KubeObject, type Store, StoreError, type StoreEvent } from "./store.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { ApiError, toStatus } from "./status.ts";
import { type IncludeObject, toTable } from "./table.ts";
import type { ServerContext } from "./context.ts";
import { flag, JSON_TYPE, optionalInt, type Target } from "./http.ts";
import { includeObject, objectKey, present, selectorFilter, wantsTable } from "./read.ts";

/** One open watch stream. */
export interface OpenWatch {
  close(): void;
}

/** The watch streams a server has open, and the lines they share. */
export interface Watches {
  open: Set<OpenWatch>;
  /** Serialized watch lines, computed once per event and view however many watchers get it. */
  lines: WeakMap<StoreEvent, Map<string, Uint8Array>>;
}

/** A server's watches before any opens. */
export function noWatches(): Watches {
  return { open: new Set(), lines: new WeakMap() };
}

/** Closes every open watch stream (their clients watch again). */
export function closeWatches(watches: Watches): void {
  for (const watch of [...watches.open]) watch.close();
}

/** What a watch asks for, read off its request before the stream opens. */
interface WatchRequest {
  type: ResourceType;
  namespace?: string;
  filter: (object: KubeObject) => boolean;
  /** Table rows, with `includeObject` of each object, instead of the objects. */
  table: boolean;
  includeObject: IncludeObject;
  /** Where the stream replays from; none: it starts with the current objects as ADDED. */
  since?: number;
  /** `sendInitialEvents`: the current objects first, whatever resourceVersion was asked. */
  sendInitial: boolean;
  timeoutSeconds: number;
  bookmarks: boolean;
}

/**
 * The response stream of one watch, among the server's open watches until it closes. Lines
 * sent in one burst of store writes leave as one chunk: far fewer stream writes when a
 * controller changes hundreds of objects in one go.
 */
interface WatchStream extends OpenWatch {
  send(line: Uint8Array): void;
  /** `stop` runs when the stream closes: the store subscription's end, the timers' clearing. */
  onClose(stop: () => void): void;
}

const encoder = new TextEncoder();

function eventLine(type: string, object: unknown): Uint8Array {
  return encoder.encode(JSON.stringify({ type, object }) + "\n");
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

/**
 * A watch stream: newline-delimited JSON events. Without a resourceVersion (or with "0")
 * it starts with the current objects as ADDED; with one, it replays from there, or answers
 * a single ERROR event with a 410 Expired Status when that version is compacted.
 */
export function watchObjects(
  ctx: ServerContext,
  watches: Watches,
  req: Request,
  url: URL,
  target: Target,
): Response {
  const request = watchRequest(req, url, target);
  let stream: WatchStream | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stream = openStream(controller, watches.open);
      startWatch(ctx, watches, request, stream);
    },
    cancel() {
      stream?.close();
    },
  });
  return new Response(body, {
    headers: { "content-type": JSON_TYPE, "transfer-encoding": "chunked" },
  });
}

function watchRequest(req: Request, url: URL, target: Target): WatchRequest {
  const { type, namespace } = target;
  const params = url.searchParams;
  const filter = selectorFilter(url, type);
  const table = wantsTable(req);
  const include = table ? includeObject(url) : "Object";
  const rvParam = params.get("resourceVersion") ?? "";
  const sendInitial = params.get("sendInitialEvents") === "true";
  const fromNow = rvParam === "" || rvParam === "0" || sendInitial;
  if (!fromNow && !/^\d+$/.test(rvParam)) {
    throw new ApiError(400, "BadRequest", `invalid resourceVersion "${rvParam}"`);
  }
  return {
    type,
    namespace,
    filter,
    table,
    includeObject: include,
    since: fromNow ? undefined : Number(rvParam),
    sendInitial,
    timeoutSeconds: optionalInt(params, "timeoutSeconds") ?? 1800,
    bookmarks: flag(params.get("allowWatchBookmarks")),
  };
}

function openStream(
  controller: ReadableStreamDefaultController<Uint8Array>,
  open: Set<OpenWatch>,
): WatchStream {
  const stops: (() => void)[] = [];
  let closed = false;
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
  const close = () => {
    if (closed) return;
    flush();
    closed = true;
    stops.forEach((stop) => stop());
    open.delete(stream);
    try {
      controller.close();
    } catch { /* the client went away first */ }
  };
  const send = (line: Uint8Array) => {
    if (closed) return;
    if (pending.length === 0) queueMicrotask(flush);
    pending.push(line);
  };
  const stream: WatchStream = { send, close, onClose: (stop) => stops.push(stop) };
  open.add(stream);
  return stream;
}

/** Sends the initial events, follows the store from where the watch asked, sets its timers. */
function startWatch(
  ctx: ServerContext,
  watches: Watches,
  request: WatchRequest,
  stream: WatchStream,
): void {
  const { store, faults } = ctx;
  const render = eventRenderer(store, watches, request);
  // Objects that matched the selectors when last seen: leaving the selection is a DELETED.
  const matching = new Set<string>();
  sendInitialEvents(store, request, matching, render, stream);
  const onEvent = (event: StoreEvent) => {
    const key = objectKey(event.object);
    if (request.filter(event.object)) {
      if (event.type === "DELETED") matching.delete(key);
      else matching.add(key);
      stream.send(render(event.type, event));
    } else if (matching.delete(key)) {
      stream.send(render("DELETED", event));
    }
  };
  if (!follow(store, request, onEvent, stream)) return;
  const timers = [setTimeout(stream.close, request.timeoutSeconds * 1000)];
  const drop = faults.current.watchDropSeconds;
  if (drop) timers.push(setTimeout(stream.close, drop * 1000));
  if (request.bookmarks) {
    timers.push(
      setInterval(() => stream.send(bookmark(store, request.type)), ctx.bookmarkIntervalMs),
    );
  }
  stream.onClose(() => timers.forEach((t) => clearTimeout(t)));
}

/**
 * The current objects the watch selects, remembered in `matching`, and sent as ADDED when the
 * watch starts from now; then, asked for with bookmarks, the bookmark that ends them.
 */
function sendInitialEvents(
  store: Store,
  request: WatchRequest,
  matching: Set<string>,
  render: (eventType: string, event: StoreEvent) => Uint8Array,
  stream: WatchStream,
): void {
  const { type, namespace, filter } = request;
  for (const object of store.scan(type.storage, { namespace, filter })) {
    matching.add(objectKey(object));
    if (request.since === undefined) {
      stream.send(render("ADDED", {
        type: "ADDED",
        resource: type.storage,
        object,
        resourceVersion: Number(object.metadata.resourceVersion),
      }));
    }
  }
  if (request.sendInitial && request.bookmarks) {
    stream.send(bookmark(store, type, { "k8s.io/initial-events-end": "true" }));
  }
}

/**
 * Subscribes `onEvent` to the store from the watch's resourceVersion. When that version is
 * compacted, the stream ends with one ERROR event, a 410 Expired Status, and this is false.
 */
function follow(
  store: Store,
  request: WatchRequest,
  onEvent: (event: StoreEvent) => void,
  stream: WatchStream,
): boolean {
  const { type, namespace, since } = request;
  try {
    stream.onClose(store.watch(type.storage, { namespace, resourceVersion: since }, onEvent));
    return true;
  } catch (err) {
    if (!(err instanceof StoreError) || err.code !== 410) throw err;
    stream.send(eventLine("ERROR", toStatus(new ApiError(410, "Expired", err.message))));
    stream.close();
    return false;
  }
}

/** How the watch writes an event: its object as the watch's version shows it, or a Table. */
function eventRenderer(
  store: Store,
  watches: Watches,
  request: WatchRequest,
): (eventType: string, event: StoreEvent) => Uint8Array {
  const { type } = request;
  let firstTable = true;
  return (eventType, event) => {
    if (!request.table) return sharedLine(watches, type, eventType, event);
    const object = toTable(type, [present(type, event.object)], {
      now: store.now(),
      includeObject: request.includeObject,
      listMeta: { resourceVersion: String(event.resourceVersion) },
      omitColumns: !firstTable,
    });
    firstTable = false;
    return eventLine(eventType, object);
  };
}

/** The line of `event` for watchers of `type`'s version, serialized once for all of them. */
function sharedLine(
  watches: Watches,
  type: ResourceType,
  eventType: string,
  event: StoreEvent,
): Uint8Array {
  let views = watches.lines.get(event);
  if (!views) watches.lines.set(event, views = new Map());
  const key = `${apiVersionOf(type)}|${eventType}`;
  let line = views.get(key);
  if (!line) views.set(key, line = eventLine(eventType, present(type, event.object)));
  return line;
}

function bookmark(
  store: Store,
  type: ResourceType,
  annotations?: Record<string, string>,
): Uint8Array {
  return eventLine("BOOKMARK", {
    kind: type.kind,
    apiVersion: apiVersionOf(type),
    metadata: {
      resourceVersion: String(store.resourceVersion),
      ...(annotations ? { annotations } : {}),
    },
  });
}
