/**
 * Watch streams: newline-delimited JSON events of one resource, as kube-apiserver sends them
 * (the current objects, or a replay from a resourceVersion; selectors, Tables, bookmarks, 410
 * Expired; objects converted by their CRD's webhook, in order), and the set of them a server has
 * open.
 */
import { type KubeObject, type Store, StoreError, type StoreEvent } from "./store.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { ApiError, toStatus } from "./status.ts";
import { type IncludeObject, toTable } from "./table.ts";
import type { ServerContext } from "./context.ts";
import { flag, JSON_TYPE, optionalInt, type Target } from "./http.ts";
import { includeObject, objectKey, present, selectorFilter, views, wantsTable } from "./read.ts";
import { concatBytes } from "../lib/bytes.ts";

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
  /**
   * Lines `work` will answer (a webhook's conversions awaited): they and whatever is sent after
   * them wait for it, so the stream keeps the store's order. A failure ends the stream with one
   * ERROR event, its Status.
   */
  defer(work: () => Promise<Uint8Array[]>): void;
  /** `stop` runs when the stream closes: the store subscription's end, the timers' clearing. */
  onClose(stop: () => void): void;
}

const encoder = new TextEncoder();

function eventLine(type: string, object: unknown): Uint8Array {
  return encoder.encode(JSON.stringify({ type, object }) + "\n");
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
  // While deferred work runs: what was sent after it, in order.
  let backlog: (Uint8Array | (() => Promise<Uint8Array[]>))[] | undefined;
  const flush = () => {
    const lines = pending;
    pending = [];
    if (closed || lines.length === 0) return;
    try {
      controller.enqueue(lines.length === 1 ? lines[0] : concatBytes(lines));
    } catch {
      close();
    }
  };
  const close = () => {
    if (closed) return;
    flush();
    closed = true;
    backlog = undefined;
    stops.forEach((stop) => stop());
    open.delete(stream);
    try {
      controller.close();
    } catch { /* the client went away first */ }
  };
  const send = (line: Uint8Array) => {
    if (closed) return;
    if (backlog) return void backlog.push(line);
    if (pending.length === 0) queueMicrotask(flush);
    pending.push(line);
  };
  const drain = async () => {
    while (!closed && backlog && backlog.length > 0) {
      const next = backlog.shift()!;
      if (next instanceof Uint8Array) {
        pending.push(next);
        continue;
      }
      flush();
      try {
        pending.push(...await next());
      } catch (err) {
        pending.push(eventLine("ERROR", toStatus(err)));
        return close();
      }
    }
    flush();
    backlog = undefined;
  };
  const defer = (work: () => Promise<Uint8Array[]>) => {
    if (closed) return;
    if (backlog) return void backlog.push(work);
    flush();
    backlog = [work];
    void drain();
  };
  const stream: WatchStream = { send, defer, close, onClose: (stop) => stops.push(stop) };
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
  sendInitialEvents(ctx, request, matching, render, stream);
  /** The line an event makes (none: the watch does not select it, and did not before). */
  const lineOf = (event: StoreEvent, view: KubeObject) => {
    const key = objectKey(view);
    if (request.filter(view)) {
      if (event.type === "DELETED") matching.delete(key);
      else matching.add(key);
      return render(event.type, event, view);
    }
    return matching.delete(key) ? render("DELETED", event, view) : undefined;
  };
  const onEvent = request.type.custom?.conversion
    ? (event: StoreEvent) =>
      withViews(ctx, request, stream, [event.object], ([view]) => {
        const line = lineOf(event, view);
        return line ? [line] : [];
      })
    : (event: StoreEvent) => {
      const line = lineOf(event, event.object);
      if (line) stream.send(line);
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
 * Sends the lines `then` makes of `objects` as the watch's version shows them: at once, or for
 * a kind with a conversion webhook once it answered (called now, so that the stream's order only
 * waits for the answer), in the stream's order. The views judge the selectors: a version's
 * selectable fields are its own.
 */
function withViews(
  ctx: ServerContext,
  request: WatchRequest,
  stream: WatchStream,
  objects: readonly KubeObject[],
  then: (views: readonly KubeObject[]) => Uint8Array[],
): void {
  if (!request.type.custom?.conversion) {
    for (const line of then(objects)) stream.send(line);
    return;
  }
  const converting = views(ctx, request.type, objects);
  converting.catch(() => {}); // answered in the stream, or dropped with it
  stream.defer(async () => then(await converting));
}

/**
 * The current objects the watch selects, remembered in `matching`, and sent as ADDED when the
 * watch starts from now; then, asked for with bookmarks, the bookmark that ends them.
 */
function sendInitialEvents(
  ctx: ServerContext,
  request: WatchRequest,
  matching: Set<string>,
  render: (eventType: string, event: StoreEvent, object: KubeObject) => Uint8Array,
  stream: WatchStream,
): void {
  const { type, namespace, filter } = request;
  const objects = ctx.store.scan(type.storage, { namespace });
  withViews(ctx, request, stream, objects, (all) =>
    all.flatMap((view, i) => {
      if (!filter(view)) return [];
      matching.add(objectKey(view));
      if (request.since !== undefined) return [];
      const object = objects[i];
      const resourceVersion = Number(object.metadata.resourceVersion);
      return [
        render("ADDED", { type: "ADDED", resource: type.storage, object, resourceVersion }, view),
      ];
    }));
  if (request.sendInitial && request.bookmarks) {
    stream.send(bookmark(ctx.store, type, { "k8s.io/initial-events-end": "true" }));
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

/**
 * How the watch writes an event: its object (stored, or the view converted for the watch) as
 * the watch's version shows it, or a Table.
 */
function eventRenderer(
  store: Store,
  watches: Watches,
  request: WatchRequest,
): (eventType: string, event: StoreEvent, object: KubeObject) => Uint8Array {
  const { type } = request;
  let firstTable = true;
  return (eventType, event, object) => {
    if (!request.table) return sharedLine(watches, type, eventType, event, object);
    const table = toTable(type, [present(type, object)], {
      now: store.now(),
      includeObject: request.includeObject,
      listMeta: { resourceVersion: String(event.resourceVersion) },
      omitColumns: !firstTable,
    });
    firstTable = false;
    return eventLine(eventType, table);
  };
}

/** The line of `event` for watchers of `type`'s version, serialized once for all of them. */
function sharedLine(
  watches: Watches,
  type: ResourceType,
  eventType: string,
  event: StoreEvent,
  object: KubeObject,
): Uint8Array {
  let views = watches.lines.get(event);
  if (!views) watches.lines.set(event, views = new Map());
  const key = `${apiVersionOf(type)}|${eventType}`;
  let line = views.get(key);
  if (!line) views.set(key, line = eventLine(eventType, present(type, object)));
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
