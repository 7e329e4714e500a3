/**
 * Request bodies in Kubernetes' protobuf encoding, for the kinds `kubectl create <kind>` sends
 * that way (kubectl's typed clients post `application/vnd.kubernetes.protobuf`, and the real
 * API server accepts it). Only decoding, only these kinds: every answer is JSON, which
 * clients read by its Content-Type. Other kinds get 415 with their name.
 *
 * Wire format: the magic `k8s\0`, then a `runtime.Unknown` {1: TypeMeta {1: apiVersion,
 * 2: kind}, 2: raw object bytes}. Field numbers are those of the `generated.proto` files of
 * k8s.io/api and k8s.io/apimachinery.
 */
import type { KubeObject } from "./store.ts";
import { bytesToBase64 } from "../lib/bytes.ts";

type Fields = Map<number, (Uint8Array | number)[]>;

class UnsupportedKind extends Error {}

function readVarint(bytes: Uint8Array, at: { i: number }): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[at.i++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
}

/** Splits a message into its fields: length-delimited ones as bytes, varints as numbers. */
function fields(bytes: Uint8Array): Fields {
  const out: Fields = new Map();
  const at = { i: 0 };
  while (at.i < bytes.length) {
    const key = readVarint(bytes, at);
    const field = Math.floor(key / 8);
    let value: Uint8Array | number;
    switch (key & 7) {
      case 0:
        value = readVarint(bytes, at);
        break;
      case 2: {
        const length = readVarint(bytes, at);
        value = bytes.subarray(at.i, at.i + length);
        at.i += length;
        break;
      }
      case 1:
        at.i += 8;
        continue;
      case 5:
        at.i += 4;
        continue;
      default:
        throw new Error(`unsupported protobuf wire type ${key & 7}`);
    }
    if (!out.has(field)) out.set(field, []);
    out.get(field)!.push(value);
  }
  return out;
}

const text = (value: Uint8Array | number) => new TextDecoder().decode(value as Uint8Array);
const base64 = (value: Uint8Array | number) => bytesToBase64(value as Uint8Array);

function one(f: Fields, n: number): Uint8Array | number | undefined {
  return f.get(n)?.[0];
}

function str(f: Fields, n: number): string | undefined {
  const v = one(f, n);
  return v === undefined ? undefined : text(v);
}

function map(
  f: Fields,
  n: number,
  value: (v: Uint8Array | number) => string = text,
): Record<string, string> | undefined {
  const entries = f.get(n);
  if (!entries) return undefined;
  return Object.fromEntries(entries.map((entry) => {
    const e = fields(entry as Uint8Array);
    return [str(e, 1) ?? "", value(one(e, 2) ?? new Uint8Array())];
  }));
}

function objectMeta(bytes: Uint8Array | number | undefined): KubeObject["metadata"] {
  const f = fields((bytes ?? new Uint8Array()) as Uint8Array);
  const finalizers = f.get(14)?.map(text);
  const ownerReferences = f.get(13)?.map((b) => {
    const o = fields(b as Uint8Array);
    return {
      apiVersion: str(o, 5) ?? "",
      kind: str(o, 1) ?? "",
      name: str(o, 3) ?? "",
      uid: str(o, 4) ?? "",
      ...(one(o, 6) !== undefined ? { controller: one(o, 6) === 1 } : {}),
      ...(one(o, 7) !== undefined ? { blockOwnerDeletion: one(o, 7) === 1 } : {}),
    };
  });
  return dropUndefined({
    name: str(f, 1) ?? "",
    generateName: str(f, 2),
    namespace: str(f, 3),
    labels: map(f, 11),
    annotations: map(f, 12),
    ownerReferences,
    finalizers,
  }) as KubeObject["metadata"];
}

function dropUndefined<T extends Record<string, unknown>>(object: T): T {
  for (const key of Object.keys(object)) if (object[key] === undefined) delete object[key];
  return object;
}

const bool = (f: Fields, n: number) => one(f, n) === undefined ? undefined : one(f, n) === 1;

/** The body of each kind, past its metadata (field 1). */
const kinds: Record<string, (f: Fields) => Record<string, unknown>> = {
  Namespace: (f) => {
    const spec = one(f, 2);
    const finalizers = spec === undefined
      ? undefined
      : fields(spec as Uint8Array).get(1)?.map(text);
    return { spec: finalizers ? { finalizers } : undefined };
  },
  ConfigMap: (f) => ({ data: map(f, 2), binaryData: map(f, 3, base64), immutable: bool(f, 4) }),
  Secret: (f) => ({
    data: map(f, 2, base64),
    type: str(f, 3),
    stringData: map(f, 4),
    immutable: bool(f, 5),
  }),
  ServiceAccount: (f) => ({
    imagePullSecrets: f.get(3)?.map((b) => ({ name: str(fields(b as Uint8Array), 1) ?? "" })),
    automountServiceAccountToken: bool(f, 4),
  }),
};

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

/** Decodes a protobuf request body; throws `UnsupportedKind` for kinds not listed above. */
export function decodeProtobufObject(bytes: Uint8Array): KubeObject {
  if (!MAGIC.every((b, i) => bytes[i] === b)) throw new Error("not a Kubernetes protobuf body");
  const unknown = fields(bytes.subarray(4));
  const typeMeta = fields((one(unknown, 1) ?? new Uint8Array()) as Uint8Array);
  const apiVersion = str(typeMeta, 1) ?? "";
  const kind = str(typeMeta, 2) ?? "";
  const body = kinds[kind];
  if (!body) throw new UnsupportedKind(kind || "(no kind)");
  const raw = fields((one(unknown, 2) ?? new Uint8Array()) as Uint8Array);
  return dropUndefined({
    apiVersion,
    kind,
    metadata: objectMeta(one(raw, 1)),
    ...body(raw),
  }) as KubeObject;
}

export function isUnsupportedKind(err: unknown): err is UnsupportedKind {
  return err instanceof UnsupportedKind;
}
