/**
 * Kubernetes' protobuf, read into the objects JSON would have given: the API server's answers for
 * built-in kinds in `application/vnd.kubernetes.protobuf` are about 60-70% of their compact JSON
 * (ADR 0040), and a rollout reads mostly pods. Each object is the `k8s\0` magic and a
 * `runtime.Unknown` (its apiVersion and kind, and the message); a watch is a stream of frames,
 * each a four-byte big-endian length and a `meta.v1.WatchEvent` whose object is such an envelope.
 * The messages' fields come from api/protobuf-schema.ts (generated from k8s.io/api's Go types).
 *
 * JSON's shape is kept where it shows: non-pointer fields tagged omitempty are left out when zero
 * (protobuf writes them all), pointer fields keep a zero value, inline structs lend their fields
 * to their parent, and Time, Quantity, IntOrString and FieldsV1 read as their JSON forms. A
 * `FieldView` decodes only the fields it names: the rest are skipped unread (a node's images and
 * a pod's managedFields are most of their bytes).
 */
import { protobufMessages } from "./protobuf-schema.ts";
import { bytesToBase64, concatBytes } from "../lib/bytes.ts";

/** Which fields of a message to decode: `true` decodes one whole, a view only the fields it names. */
export type FieldView = { [json: string]: true | FieldView };

interface Field {
  name: string;
  kind: string;
  repeated: boolean;
  map: boolean;
  omitEmpty: boolean;
  pointer: boolean;
  inline: boolean;
}

const magic = [0x6b, 0x38, 0x73, 0x00];
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The schema's messages, each field by number, parsed once when first asked for. */
const messages = new Map<string, Map<number, Field>>();

function messageFields(kind: string): Map<number, Field> {
  let fields = messages.get(kind);
  if (fields) return fields;
  const source = protobufMessages[kind];
  if (source === undefined) throw new ProtobufError(`no message ${kind} in the schema`);
  fields = new Map();
  for (const line of source.split("|")) {
    const [number, name, fieldKind, flags = ""] = line.split(" ");
    fields.set(Number(number), {
      name,
      kind: fieldKind,
      repeated: flags.includes("r"),
      map: flags.includes("m"),
      omitEmpty: flags.includes("o"),
      pointer: flags.includes("p"),
      inline: flags.includes("i"),
    });
  }
  messages.set(kind, fields);
  return fields;
}

/** The JSON names of a message's fields (for a view of all but some). */
export function messageFieldNames(kind: string): string[] {
  return [...messageFields(kind).values()].map((field) => field.name);
}

export class ProtobufError extends Error {
  override name = "ProtobufError";
}

/** Bytes that end before what they began: in a stream, the rest is still to come. */
class PastEndError extends ProtobufError {}

/** An envelope whose kind this decoder has no schema for. */
export class UnreadKindError extends ProtobufError {
  override name = "UnreadKindError";
  constructor(readonly apiVersion: string, readonly kind: string) {
    super(`an object of ${apiVersion}/${kind} is not read here`);
  }
}

/** The kinds of object an envelope may hold, by `apiVersion/kind`. */
const kindsByType: Record<string, string> = {
  "v1/Pod": "core.Pod",
  "v1/PodList": "core.PodList",
  "v1/Node": "core.Node",
  "v1/NodeList": "core.NodeList",
  "v1/Status": "meta.Status",
  "v1/Namespace": "core.Namespace",
  "v1/ConfigMap": "core.ConfigMap",
  "v1/Secret": "core.Secret",
  "v1/ServiceAccount": "core.ServiceAccount",
};

/** One protobuf message's bytes, read field by field. */
class Reader {
  pos: number;
  constructor(readonly bytes: Uint8Array, start = 0, readonly end = bytes.length) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new PastEndError("a varint runs past its message");
      const byte = this.bytes[this.pos++];
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result;
      scale *= 128;
    }
    throw new ProtobufError("a varint longer than ten bytes");
  }

  /** The next length-delimited value's bounds. */
  span(): [number, number] {
    const length = this.varint();
    const start = this.pos;
    if (start + length > this.end) throw new ProtobufError("a field runs past its message");
    this.pos = start + length;
    return [start, start + length];
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.span();
    else if (wire === 5) this.pos += 4;
    else throw new ProtobufError(`wire type ${wire} is not read here`);
    if (this.pos > this.end) throw new ProtobufError("a field runs past its message");
  }
}

/** An int64 read as a varint: two's complement above 2^63 is negative. */
function signed(value: number): number {
  return value >= 2 ** 63 ? value - 2 ** 64 : value;
}

/**
 * Strings and times read before, shared: a cache keeps thousands of pods whose short strings
 * ("True", "Ready", "Running", a namespace, a hash) and times (a pod's conditions, pods started
 * in one wave) repeat. JSON.parse shares short strings too; without this a pod read as protobuf
 * held 40% more memory than one read as JSON. Cleared when full: a cache, never a leak.
 */
const recentTexts = new Map<string, string>();
const timeTexts = new Map<number, string>();
const recentTextsCap = 4096;
const sharedTextLength = 10;

function text(bytes: Uint8Array, [start, end]: [number, number]): string {
  const value = utf8.decode(bytes.subarray(start, end));
  if (value.length > sharedTextLength) return value;
  const known = recentTexts.get(value);
  if (known !== undefined) return known;
  if (recentTexts.size >= recentTextsCap) recentTexts.clear();
  recentTexts.set(value, value);
  return value;
}

/** A scalar or special value of `kind` at the reader's position, of wire type `wire`. */
function readValue(reader: Reader, kind: string, wire: number, view: true | FieldView): unknown {
  switch (kind) {
    case "string":
      return text(reader.bytes, reader.span());
    case "bool":
      return reader.varint() !== 0;
    case "int32":
    case "int64":
      return signed(reader.varint());
    case "double": {
      const value = new DataView(reader.bytes.buffer, reader.bytes.byteOffset + reader.pos, 8)
        .getFloat64(0, true);
      reader.pos += 8;
      return value;
    }
    case "bytes": {
      const [start, end] = reader.span();
      return bytesToBase64(reader.bytes.subarray(start, end));
    }
    case "Time":
      return readTime(reader);
    case "Quantity":
      return readSingleString(reader);
    case "IntOrString":
      return readIntOrString(reader);
    case "FieldsV1": {
      const raw = readSingleString(reader);
      return raw === undefined ? undefined : JSON.parse(raw);
    }
    default:
      if (!kind.includes(".")) throw new ProtobufError(`a field of kind ${kind} is not read here`);
      if (wire !== 2) throw new ProtobufError(`${kind} with wire type ${wire}`);
      return decodeMessage(reader.bytes, kind, view, ...reader.span());
  }
}

/** `meta.v1.Time` (seconds and nanos) as JSON writes it: RFC 3339 to the second. */
function readTime(reader: Reader): string | undefined {
  const [start, end] = reader.span();
  const inner = new Reader(reader.bytes, start, end);
  let seconds = 0;
  while (!inner.done) {
    const tag = inner.varint();
    if (tag >>> 3 === 1 && (tag & 7) === 0) seconds = signed(inner.varint());
    else inner.skip(tag & 7);
  }
  // A zero Time is JSON's null: left out.
  if (seconds === 0) return undefined;
  let written = timeTexts.get(seconds);
  if (written === undefined) {
    // join makes one flat string: a replace or a `+` would keep the longer ISO form behind it.
    written = [new Date(seconds * 1000).toISOString().slice(0, 19), "Z"].join("");
    if (timeTexts.size >= recentTextsCap) timeTexts.clear();
    timeTexts.set(seconds, written);
  }
  return written;
}

/** A message of one string field numbered 1 (Quantity's and FieldsV1's forms). */
function readSingleString(reader: Reader): string | undefined {
  const [start, end] = reader.span();
  const inner = new Reader(reader.bytes, start, end);
  let value: string | undefined;
  while (!inner.done) {
    const tag = inner.varint();
    if (tag >>> 3 === 1 && (tag & 7) === 2) value = text(inner.bytes, inner.span());
    else inner.skip(tag & 7);
  }
  return value;
}

function readIntOrString(reader: Reader): number | string {
  const [start, end] = reader.span();
  const inner = new Reader(reader.bytes, start, end);
  let type = 0;
  let intVal = 0;
  let strVal = "";
  while (!inner.done) {
    const tag = inner.varint();
    const number = tag >>> 3;
    if (number === 1) type = inner.varint();
    else if (number === 2) intVal = signed(inner.varint());
    else if (number === 3) strVal = text(inner.bytes, inner.span());
    else inner.skip(tag & 7);
  }
  return type === 1 ? strVal : intVal;
}

function isZero(value: unknown): boolean {
  return value === "" || value === 0 || value === false || value === undefined;
}

/** A map entry: key (1) and value (2). */
function readMapEntry(reader: Reader, kind: string, view: true | FieldView): [string, unknown] {
  const [start, end] = reader.span();
  const inner = new Reader(reader.bytes, start, end);
  let key = "";
  let value: unknown = kind === "string" ? "" : undefined;
  while (!inner.done) {
    const tag = inner.varint();
    const number = tag >>> 3;
    if (number === 1) key = text(inner.bytes, inner.span());
    else if (number === 2) value = readValue(inner, kind, tag & 7, view);
    else inner.skip(tag & 7);
  }
  return [key, value];
}

/** The message `kind` in `bytes[start, end)`, as JSON would give it, limited to `view`. */
export function decodeMessage(
  bytes: Uint8Array,
  kind: string,
  view: true | FieldView = true,
  start = 0,
  end = bytes.length,
): Record<string, unknown> {
  const fields = messageFields(kind);
  const reader = new Reader(bytes, start, end);
  const object: Record<string, unknown> = {};
  let lists: string[] | undefined;
  while (!reader.done) {
    const tag = reader.varint();
    const wire = tag & 7;
    const field = fields.get(tag >>> 3);
    const fieldView = field && (view === true || field.inline ? view : view[field.name]);
    if (!field || fieldView === undefined) {
      reader.skip(wire);
      continue;
    }
    if (field.inline) {
      Object.assign(object, decodeMessage(bytes, field.kind, fieldView, ...reader.span()));
    } else if (field.map) {
      const map = (object[field.name] ??= {}) as Record<string, unknown>;
      const [key, value] = readMapEntry(reader, field.kind, fieldView);
      map[key] = value;
    } else if (field.repeated) {
      let list = object[field.name] as unknown[] | undefined;
      if (!list) {
        list = object[field.name] = [];
        (lists ??= []).push(field.name);
      }
      if (wire === 2 && ["bool", "int32", "int64"].includes(field.kind)) {
        // A packed list of varints.
        const [from, to] = reader.span();
        const packed = new Reader(bytes, from, to);
        while (!packed.done) list.push(readValue(packed, field.kind, 0, fieldView));
      } else {
        list.push(readValue(reader, field.kind, wire, fieldView));
      }
    } else {
      const value = readValue(reader, field.kind, wire, fieldView);
      if (value === undefined || (field.omitEmpty && !field.pointer && isZero(value))) {
        delete object[field.name];
      } else {
        object[field.name] = value;
      }
    }
  }
  // A list grown by push keeps room for more (17 slots for one item): the copy is exactly its
  // length, as JSON.parse's lists are. A cache keeps thousands of pods.
  for (const name of lists ?? []) object[name] = (object[name] as unknown[]).slice();
  return object;
}

/** The kinds of single object read here (lists and Status aside), as a message can name them. */
export const readObjectKinds: string[] = [
  ...Object.keys(kindsByType)
    .map((type) => type.split("/").at(-1)!)
    .filter((kind) => !kind.endsWith("List") && kind !== "Status"),
  "DeleteOptions",
];

/** Whether `bytes` begin with protobuf's `k8s\0` magic. */
export function isProtobufEnvelope(bytes: Uint8Array): boolean {
  return magic.every((byte, i) => bytes[i] === byte);
}

/** An envelope's `runtime.TypeMeta`: its apiVersion and kind. */
function readTypeMeta(bytes: Uint8Array, start: number, end: number) {
  const reader = new Reader(bytes, start, end);
  let apiVersion = "";
  let kind = "";
  while (!reader.done) {
    const tag = reader.varint();
    if (tag >>> 3 === 1) apiVersion = text(bytes, reader.span());
    else if (tag >>> 3 === 2) kind = text(bytes, reader.span());
    else reader.skip(tag & 7);
  }
  return { apiVersion, kind };
}

/**
 * The object in a protobuf envelope, with its apiVersion and kind, its fields limited to `view`
 * (lists: `view` applies to each item). Only the kinds a cache or an error reads are known.
 */
export function decodeObject(
  bytes: Uint8Array,
  view: true | FieldView = true,
  start = 0,
  end = bytes.length,
): Record<string, unknown> {
  if (!isProtobufEnvelope(bytes.subarray(start, end))) {
    throw new ProtobufError("no k8s protobuf magic at the start of the object");
  }
  const reader = new Reader(bytes, start + magic.length, end);
  let apiVersion = "";
  let kind = "";
  let raw: [number, number] | undefined;
  while (!reader.done) {
    const tag = reader.varint();
    const number = tag >>> 3;
    if (number === 1) {
      ({ apiVersion, kind } = readTypeMeta(bytes, ...reader.span()));
    } else if (number === 2) {
      raw = reader.span();
    } else {
      reader.skip(tag & 7);
    }
  }
  // DeleteOptions is sent in the version of the resource deleted (v1, apps/v1, …), one message.
  const message = kind === "DeleteOptions"
    ? "meta.DeleteOptions"
    : kindsByType[`${apiVersion}/${kind}`];
  if (!message) throw new UnreadKindError(apiVersion, kind);
  if (!raw) throw new ProtobufError(`${apiVersion}/${kind} without its message`);
  // A Status (an error, or a watch's ERROR event: 410 Gone) is read whole, whatever the view.
  const objectView = message === "meta.Status"
    ? true
    : kind.endsWith("List") && view !== true
    ? { items: view, metadata: true as const }
    : view;
  const object = decodeMessage(bytes, message, objectView, ...raw);
  if (kind.endsWith("List")) {
    // Items carry no apiVersion and kind in protobuf; JSON gives none either.
    object.items ??= [];
  }
  return { apiVersion, kind, ...object };
}

/** A watch event: its type, and its object read as `decodeObject` reads one. */
export function decodeWatchEvent(
  frame: Uint8Array,
  view: true | FieldView = true,
): { type: string; object: Record<string, unknown> } {
  const reader = new Reader(frame);
  let type = "";
  let object: Record<string, unknown> | undefined;
  while (!reader.done) {
    const tag = reader.varint();
    const number = tag >>> 3;
    if (number === 1) {
      type = text(frame, reader.span());
    } else if (number === 2) {
      const [from, to] = reader.span();
      const raw = new Reader(frame, from, to);
      while (!raw.done) {
        const inner = raw.varint();
        if (inner >>> 3 === 1) object = decodeObject(frame, view, ...raw.span());
        else raw.skip(inner & 7);
      }
    } else {
      reader.skip(tag & 7);
    }
  }
  if (!type || !object) throw new ProtobufError("a watch event without its type or object");
  return { type, object };
}

/** A stream read in whole units: the bytes of a unit cut by a chunk's end wait for the next. */
class PendingBytes {
  #bytes = new Uint8Array(0);

  /** The bytes still waiting, then `chunk`. */
  before(chunk: Uint8Array): Uint8Array {
    return this.#bytes.length === 0 ? chunk : concatBytes([this.#bytes, chunk]);
  }

  /** Keeps `bytes` from `from` on, as a copy: the chunk's buffer may be reused by its reader. */
  keep(bytes: Uint8Array, from: number): void {
    this.#bytes = bytes.slice(from);
  }

  get empty(): boolean {
    return this.#bytes.length === 0;
  }
}

/**
 * Splits a protobuf watch stream into its frames as chunks arrive: each four-byte big-endian
 * length and that many bytes. A frame larger than `maxFrameBytes` is an error, not a wait.
 */
export class WatchFrames {
  #pending = new PendingBytes();

  constructor(
    private readonly onFrame: (frame: Uint8Array) => void,
    private readonly maxFrameBytes = 16 * 2 ** 20,
  ) {}

  push(chunk: Uint8Array): void {
    let bytes = this.#pending.before(chunk);
    while (bytes.length >= 4) {
      const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0);
      if (length > this.maxFrameBytes) {
        throw new ProtobufError(`a watch frame of ${length} bytes (at most ${this.maxFrameBytes})`);
      }
      if (bytes.length < 4 + length) break;
      this.onFrame(bytes.subarray(4, 4 + length));
      bytes = bytes.subarray(4 + length);
    }
    this.#pending.keep(bytes, 0);
  }

  /** Whether a frame was cut short when the stream ended. */
  get partial(): boolean {
    return !this.#pending.empty;
  }
}

/**
 * A field's header when all of it has arrived (its value may still be arriving): its number, wire
 * type and where its value lies.
 */
function fieldHeader(
  bytes: Uint8Array,
  pos: number,
): { number: number; wire: number; start: number; end: number } | undefined {
  const reader = new Reader(bytes, pos);
  try {
    const key = reader.varint();
    const wire = key & 7;
    const start = reader.pos;
    if (wire === 2) {
      const length = reader.varint();
      return { number: key >>> 3, wire, start: reader.pos, end: reader.pos + length };
    }
    if (wire === 0) {
      reader.varint();
      return { number: key >>> 3, wire, start, end: reader.pos };
    }
    if (wire === 1 || wire === 5) {
      return { number: key >>> 3, wire, start, end: start + (wire === 1 ? 8 : 4) };
    }
    throw new ProtobufError(`wire type ${wire} is not read here`);
  } catch (err) {
    if (err instanceof PastEndError) return undefined;
    throw err;
  }
}

/**
 * A protobuf list read as its chunks arrive, each item decoded (as far as `view` reaches) and
 * handed on as soon as its bytes are in, then dropped: a 5,000-pod list is never held whole,
 * neither as bytes nor as objects, as kube/list-items.ts reads a JSON one. An item larger than
 * `maxItemBytes` is an error, not a wait.
 */
export class ProtobufListItems {
  #pending = new PendingBytes();
  #stage: "magic" | "envelope" | "list" | "after" = "magic";
  /** Bytes of the list's message not yet read. */
  #listLeft = 0;
  #apiVersion = "";
  #kind = "";
  #itemMessage = "";
  #metadata: Record<string, unknown> = {};

  constructor(
    private readonly onItem: (item: Record<string, unknown>) => void,
    private readonly view: true | FieldView = true,
    private readonly maxItemBytes = 16 * 2 ** 20,
  ) {}

  push(chunk: Uint8Array): void {
    const bytes = this.#pending.before(chunk);
    let pos = 0;
    while (pos < bytes.length) {
      if (this.#stage === "magic") {
        if (bytes.length < magic.length) break;
        if (!isProtobufEnvelope(bytes)) {
          throw new ProtobufError("no k8s protobuf magic at the start of the list");
        }
        pos = magic.length;
        this.#stage = "envelope";
        continue;
      }
      if (this.#stage === "list" && this.#listLeft === 0) {
        this.#stage = "after";
        continue;
      }
      const field = fieldHeader(bytes, pos);
      if (!field) break;
      if (this.#stage === "envelope" && field.number === 2 && field.wire === 2) {
        // The list's message: read item by item from here on, not waited for whole.
        this.#startList();
        this.#listLeft = field.end - field.start;
        pos = field.start;
        this.#stage = "list";
        continue;
      }
      if (field.end - field.start > this.maxItemBytes) {
        throw new ProtobufError(
          `a list item of ${field.end - field.start} bytes (at most ${this.maxItemBytes})`,
        );
      }
      if (field.end > bytes.length) break;
      if (this.#stage === "list") {
        if (field.end - pos > this.#listLeft) throw new ProtobufError("an item runs past its list");
        this.#listLeft -= field.end - pos;
        if (field.number === 2 && field.wire === 2) {
          this.onItem(decodeMessage(bytes, this.#itemMessage, this.view, field.start, field.end));
        } else if (field.number === 1 && field.wire === 2) {
          this.#metadata = decodeMessage(bytes, "meta.ListMeta", true, field.start, field.end);
        }
      } else if (this.#stage === "envelope" && field.number === 1 && field.wire === 2) {
        ({ apiVersion: this.#apiVersion, kind: this.#kind } = readTypeMeta(
          bytes,
          field.start,
          field.end,
        ));
      }
      pos = field.end;
    }
    this.#pending.keep(bytes, pos);
  }

  #startList(): void {
    const message = kindsByType[`${this.#apiVersion}/${this.#kind}`];
    const items = message && this.#kind.endsWith("List")
      ? messageFields(message).get(2)
      : undefined;
    if (!items) {
      throw new ProtobufError(`${this.#apiVersion}/${this.#kind} is not a list read here`);
    }
    this.#itemMessage = items.kind;
  }

  /** The list's apiVersion, kind and metadata, once the stream has ended whole. */
  end(): { apiVersion: string; kind: string; metadata: Record<string, unknown> } {
    if (this.#stage !== "after" && !(this.#stage === "list" && this.#listLeft === 0)) {
      throw new ProtobufError(
        `the list ended ${this.#stage === "list" ? "within" : "before"} its items`,
      );
    }
    if (!this.#pending.empty) throw new ProtobufError("the list ended within a field");
    return { apiVersion: this.#apiVersion, kind: this.#kind, metadata: this.#metadata };
  }
}
