/**
 * Pods and nodes as the caches read them, from kube-apiserver's own answers (api/testdata/protobuf:
 * one list asked once as JSON and once as protobuf): bytes per item on the wire, the time to read
 * a list into what the cache keeps (kube/list-items.ts's readListBody, the client's own path), and
 * the heap each kept item holds.
 * The fixture's lists are read `copies` times over, as a fleet of that many lists would be.
 * Prints a table; never fails.
 *
 *   deno run -A --v8-flags=--expose-gc bench/wire-forms.ts [--copies N]
 */
import { parseArgs } from "node:util";
import { markdownTable } from "./markdown-table.ts";
import { readListBody } from "../kube/list-items.ts";
import {
  type CachedForm,
  type KubeObject,
  nodeCachedForm,
  podCachedForm,
} from "../kube/wire-objects.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { copies: { type: "string", default: "400" } },
  strict: true,
});
const copies = Number(flags.copies);
const chunkBytes = 64 * 1024;

const fixture = (name: string) =>
  Deno.readFileSync(new URL(`../api/testdata/protobuf/${name}`, import.meta.url));
// deno-lint-ignore no-explicit-any
const gc = (globalThis as any).gc as (() => void) | undefined;

function chunksOf(bytes: Uint8Array): Uint8Array[] {
  const chunks = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) {
    chunks.push(bytes.slice(at, at + chunkBytes));
  }
  return chunks;
}

/** One row: `kind` answered as `format`, read `copies` times, each item kept until measured. */
async function measure(kind: string, form: CachedForm, format: string): Promise<string[]> {
  // The JSON fixtures are indented; kube-apiserver answers compact JSON.
  const bytes = format === "JSON"
    ? new TextEncoder().encode(JSON.stringify(JSON.parse(
      new TextDecoder().decode(fixture(`${kind}list.json`)),
    )))
    : fixture(`${kind}list.pb`);
  const chunks = chunksOf(bytes);
  const perList: KubeObject[] = [];
  await readListBody(chunks, format === "protobuf", form, perList);
  gc?.();
  const before = Deno.memoryUsage().heapUsed;
  const kept: KubeObject[] = [];
  const started = performance.now();
  for (let i = 0; i < copies; i++) await readListBody(chunks, format === "protobuf", form, kept);
  const ms = performance.now() - started;
  gc?.();
  const retained = Deno.memoryUsage().heapUsed - before;
  return [
    kind,
    format,
    (bytes.length / perList.length / 1024).toFixed(2),
    ((ms * 1000) / kept.length).toFixed(1),
    gc ? (retained / kept.length / 1024).toFixed(2) : "(run with --v8-flags=--expose-gc)",
  ];
}

const rows: string[][] = [];
for (const [kind, form] of [["pod", podCachedForm], ["node", nodeCachedForm]] as const) {
  for (const format of ["JSON", "protobuf"]) rows.push(await measure(kind, form, format));
}

console.log(
  `\nPods and nodes read into the caches' forms, ${copies} copies of kube-apiserver's lists\n`,
);
console.log(markdownTable(
  ["kind", "answered as", "KiB per item on the wire", "µs to read one", "KiB held per item"],
  rows,
));
