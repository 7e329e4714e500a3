/**
 * The decoder against kube-apiserver's own answers: each fixture in testdata/protobuf was asked of
 * cluster/'s kube-apiserver v1.33.13 during a bench rollout, once as protobuf and once as JSON
 * (the lists and the watch a moment apart, so their list metadata and items' versions may
 * differ). What the decoder reads must be what JSON says.
 */
import { assertEquals, assertThrows } from "@std/assert";
import {
  decodeMessage,
  decodeObject,
  decodeWatchEvent,
  type FieldView,
  ProtobufError,
  ProtobufListItems,
  WatchFrames,
} from "./protobuf.ts";

const fixture = (name: string) =>
  Deno.readFileSync(new URL(`./testdata/protobuf/${name}`, import.meta.url));
const jsonFixture = (name: string) => new TextDecoder().decode(fixture(name));

/** JSON's nulls (a zero Time) are left out by the decoder. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, withoutNulls(v)]),
    );
  }
  return value;
}

Deno.test("a pod read from protobuf is the pod JSON gives, its pointer and non-omitempty zeros kept", () => {
  const pod = decodeObject(fixture("pod.pb"));
  assertEquals(pod, withoutNulls(JSON.parse(jsonFixture("pod.json"))));
  // What the equality covers: `priority` is a pointer (its 0 stays), `restartCount` is not
  // omitempty (its 0 stays), `stdin` is omitempty (its false, which protobuf writes, goes).
  const spec = pod.spec as { priority?: number; containers: Record<string, unknown>[] };
  assertEquals(spec.priority, 0);
  assertEquals("stdin" in spec.containers[0], false);
  const status = pod.status as { containerStatuses: { restartCount?: number }[] };
  assertEquals(status.containerStatuses[0].restartCount, 0);
});

for (const list of ["podlist", "nodelist"]) {
  Deno.test(`the items of a ${list} read from protobuf are those JSON gives`, () => {
    const decoded = decodeObject(fixture(`${list}.pb`)) as { items: unknown[]; kind: string };
    const json = JSON.parse(jsonFixture(`${list}.json`)) as { items: unknown[]; kind: string };
    assertEquals(decoded.kind, json.kind);
    const names = (items: unknown[]) =>
      items.map((item) => (item as { metadata: { name: string } }).metadata.name);
    assertEquals(names(decoded.items), names(json.items));
    const stable = (item: unknown) => {
      // A node's heartbeats and versions move between the two answers; the rest does not.
      const { metadata, spec } = item as { metadata: Record<string, unknown>; spec: unknown };
      const { resourceVersion: _v, managedFields: _m, ...rest } = metadata;
      return { metadata: rest, spec };
    };
    assertEquals(decoded.items.map(stable), (withoutNulls(json.items) as unknown[]).map(stable));
  });
}

Deno.test("a list read as its chunks arrive, however they cut it, is the list decoded whole", () => {
  for (const list of ["podlist", "nodelist"]) {
    const bytes = fixture(`${list}.pb`);
    const view: FieldView = {
      metadata: { name: true, labels: true },
      status: { conditions: true },
    };
    const whole = decodeObject(bytes, view) as { items: unknown[] } & Record<string, unknown>;
    for (const chunkSize of [bytes.length, 1, 3, 700]) {
      const items: unknown[] = [];
      const reader = new ProtobufListItems((item) => items.push(item), view);
      for (let at = 0; at < bytes.length; at += chunkSize) {
        reader.push(bytes.subarray(at, at + chunkSize));
      }
      const { items: _, ...rest } = whole;
      assertEquals({ ...reader.end(), items }, { ...rest, items: whole.items });
    }
    assertEquals(whole.items.length > 1, true);
  }
});

Deno.test("fields the list reader does not know, of each fixed width, are stepped over whole", () => {
  const bytes = fixture("nodelist.pb");
  const unknownFields = [
    ...[(9 << 3) | 0, 0xac, 0x02], // a varint, 300
    ...[(10 << 3) | 1, 0, 0, 0, 0, 0x12, 0x7f, 0, 0], // a fixed64 whose 5th byte reads as a tag
    ...[(11 << 3) | 5, 1, 2, 3, 4], // a fixed32
  ];
  // Just after the 4-byte magic, as the first fields of the envelope.
  const withUnknown = new Uint8Array([
    ...bytes.subarray(0, 4),
    ...unknownFields,
    ...bytes.subarray(4),
  ]);
  const read = (input: Uint8Array, chunkSize: number) => {
    const items: unknown[] = [];
    const reader = new ProtobufListItems((item) => items.push(item));
    for (let at = 0; at < input.length; at += chunkSize) {
      reader.push(input.subarray(at, at + chunkSize));
    }
    return { ...reader.end(), items };
  };
  for (const chunkSize of [1, 5, withUnknown.length]) {
    assertEquals(read(withUnknown, chunkSize), read(bytes, bytes.length));
  }
});

Deno.test("a list cut short, not a list, or with an item past the cap, fails naming why", () => {
  const bytes = fixture("podlist.pb");
  const cut = new ProtobufListItems(() => {});
  cut.push(bytes.subarray(0, bytes.length - 50));
  assertThrows(() => cut.end(), ProtobufError, "within");
  const notAList = new ProtobufListItems(() => {});
  assertThrows(() => notAList.push(fixture("pod.pb")), ProtobufError, "v1/Pod is not a list");
  const capped = new ProtobufListItems(() => {}, true, 100);
  assertThrows(() => capped.push(bytes), ProtobufError, "at most 100");
  assertThrows(
    () => new ProtobufListItems(() => {}).push(bytes.subarray(4)),
    ProtobufError,
    "magic",
  );
});

Deno.test("a watch stream's frames, however the chunks cut them, are the events JSON gives", () => {
  const stream = fixture("watch.pb");
  const json = jsonFixture("watch.json").trim().split("\n").map((line) => JSON.parse(line));
  for (const chunkSize of [stream.length, 1, 7, 1000]) {
    const events: unknown[] = [];
    const frames = new WatchFrames((frame) => events.push(decodeWatchEvent(frame)));
    for (let at = 0; at < stream.length; at += chunkSize) {
      frames.push(stream.subarray(at, at + chunkSize));
    }
    assertEquals(frames.partial, false);
    assertEquals(events, withoutNulls(json));
  }
});

Deno.test("a view decodes only the fields it names", () => {
  const view: FieldView = {
    metadata: { name: true, labels: true },
    status: { containerStatuses: { image: true } },
  };
  const pod = decodeObject(fixture("pod.pb"), view);
  const json = JSON.parse(jsonFixture("pod.json"));
  assertEquals(pod, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: json.metadata.name, labels: json.metadata.labels },
    status: { containerStatuses: [{ image: json.status.containerStatuses[0].image }] },
  });
});

Deno.test("bytes that are not what they claim fail with what is wrong, never an empty object", () => {
  const pod = fixture("pod.pb");
  assertThrows(() => decodeObject(pod.subarray(0, pod.length - 10)), ProtobufError, "past");
  assertThrows(() => decodeObject(pod.subarray(4)), ProtobufError, "no k8s protobuf magic");
  assertThrows(() => decodeMessage(pod, "core.Nothing"), ProtobufError, "no message core.Nothing");
  // An envelope whose kind is not read here (a DaemonSet: apps/v1).
  const typeMeta = [0x0a, 0x04, ...new TextEncoder().encode("apps"), 0x12, 0x01, 0x44];
  const envelope = new Uint8Array([0x6b, 0x38, 0x73, 0x00, 0x0a, typeMeta.length, ...typeMeta]);
  assertThrows(() => decodeObject(envelope), ProtobufError, "apps/D is not read here");
  const frames = new WatchFrames(() => {}, 1024);
  assertThrows(() => frames.push(new Uint8Array([0, 0, 8, 0])), ProtobufError, "2048 bytes");
});

Deno.test("a Status, answered or in a watch's ERROR event, is read whole whatever the view", () => {
  assertEquals(
    decodeObject(fixture("status404.pb"), { metadata: { name: true } }),
    withoutNulls(JSON.parse(jsonFixture("status404.json"))),
  );
  const events: unknown[] = [];
  const frames = new WatchFrames((frame) =>
    events.push(decodeWatchEvent(frame, { metadata: { name: true } }))
  );
  frames.push(fixture("watch410.pb"));
  // The watch's 410 Gone: its code is what tells a watch to list again.
  assertEquals(events, [withoutNulls(JSON.parse(jsonFixture("watch410.json")))]);
});

/** A length-delimited field: its tag, its length (under 128 here), its bytes. */
function field(number: number, bytes: number[] | string): number[] {
  const body = typeof bytes === "string" ? [...new TextEncoder().encode(bytes)] : bytes;
  return [(number << 3) | 2, body.length, ...body];
}

Deno.test("DeleteOptions, in whichever version a client sends it, is read from protobuf", () => {
  // As controller-runtime's typed client sends a DELETE's body: gracePeriodSeconds 0,
  // propagationPolicy Foreground, dryRun [All], a precondition on the uid.
  const options = [
    0x08,
    0x00,
    ...field(2, field(1, "uid-1")),
    ...field(4, "Foreground"),
    ...field(5, "All"),
  ];
  for (const apiVersion of ["v1", "apps/v1"]) {
    const envelope = new Uint8Array([
      ...[0x6b, 0x38, 0x73, 0x00],
      ...field(1, [...field(1, apiVersion), ...field(2, "DeleteOptions")]),
      ...field(2, options),
    ]);
    assertEquals(decodeObject(envelope), {
      apiVersion,
      kind: "DeleteOptions",
      gracePeriodSeconds: 0,
      preconditions: { uid: "uid-1" },
      propagationPolicy: "Foreground",
      dryRun: ["All"],
    });
  }
});
