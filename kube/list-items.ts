/**
 * A Kubernetes list's JSON read as it arrives: each of its `items` parsed alone and handed on at
 * once, the rest (kind, apiVersion, metadata) kept as a small object. A list of 5,000 pods is
 * about 10 MB of text; parsed whole, the text, every full object and the cache's trimmed copies
 * were alive together (a controller on 5,000 sim nodes started at 196 MiB, not 164). Item by
 * item, only one full object lives at a time beside what the reader keeps of it.
 */
import { concatBytes } from "../lib/bytes.ts";
import { ProtobufListItems } from "../api/protobuf.ts";
import type { CachedForm, KubeObject } from "./wire-objects.ts";
const openBrace = 0x7b, closeBrace = 0x7d, openBracket = 0x5b, closeBracket = 0x5d;
const quote = 0x22, backslash = 0x5c;

export class ListItemsReader {
  readonly #onItem: (item: unknown) => void;
  readonly #decoder = new TextDecoder();
  /** Open objects and arrays around the byte being read. */
  #depth = 0;
  #inString = false;
  #escaped = false;
  /**
   * The first bytes of the last string that began at depth 1 (a top-level key, when a value
   * follows it): enough to tell `items`.
   */
  #topString: string | undefined;
  #inTopString = false;
  /** Inside the `items` array (depth 2 is its elements' level). */
  #inItems = false;
  /** The bytes of the item being read, across chunks. */
  #item: Uint8Array[] = [];
  #itemStart = -1;
  /** Everything outside `items`' elements: a small JSON text once the list ends. */
  #rest: Uint8Array[] = [];
  #items = 0;

  constructor(onItem: (item: unknown) => void) {
    this.#onItem = onItem;
  }

  /** Reads the next bytes of the list; items complete in them are handed to `onItem`. */
  push(chunk: Uint8Array): void {
    let restStart = this.#inItems ? -1 : 0;
    this.#itemStart = this.#item.length > 0 ? 0 : -1;
    /** The next backslash at or after the string being skipped (-1: none left in the chunk). */
    let backslashAt = -2;
    let i = 0;
    if (this.#escaped && chunk.length > 0) {
      // The last chunk ended on a backslash inside a string: this first byte is escaped.
      this.#escaped = false;
      i = 1;
    }
    for (; i < chunk.length; i++) {
      if (this.#inString) {
        // Straight to the string's closing quote (most of a list's bytes are inside strings, and
        // `indexOf` is native): nothing in between is structure.
        for (;;) {
          const closing = chunk.indexOf(quote, i);
          if (backslashAt !== -1 && backslashAt < i) backslashAt = chunk.indexOf(backslash, i);
          if (backslashAt !== -1 && (closing === -1 || backslashAt < closing)) {
            this.#keepTopString(chunk, i, backslashAt + 2);
            if (backslashAt + 1 >= chunk.length) this.#escaped = true;
            i = backslashAt + 2;
            if (i >= chunk.length) break;
            continue;
          }
          const end = closing === -1 ? chunk.length : closing;
          this.#keepTopString(chunk, i, end);
          if (closing !== -1) {
            this.#inString = false;
            this.#inTopString = false;
          }
          i = end;
          break;
        }
        continue;
      }
      const byte = chunk[i];
      switch (byte) {
        case quote:
          if (this.#inItems && this.#depth === 2) throw notAnObject(this.#items);
          this.#inString = true;
          if (this.#depth === 1) {
            this.#topString = "";
            this.#inTopString = true;
          }
          break;
        case openBrace:
        case openBracket:
          this.#depth++;
          if (this.#inItems && this.#depth === 3) this.#itemStart = i;
          else if (byte === openBracket && this.#depth === 2 && this.#isItemsKey()) {
            // `[` is kept in the rest, the elements are not.
            this.#rest.push(chunk.slice(restStart, i + 1));
            restStart = -1;
            this.#inItems = true;
          }
          break;
        case closeBrace:
        case closeBracket:
          this.#depth--;
          if (this.#inItems && this.#depth === 2) this.#endItem(chunk, i);
          else if (this.#inItems && this.#depth === 1) {
            this.#inItems = false;
            restStart = i;
          }
          break;
        case 0x20: // whitespace and commas between items
        case 0x09:
        case 0x0a:
        case 0x0d:
        case 0x2c:
          break;
        default:
          if (this.#inItems && this.#depth === 2) throw notAnObject(this.#items);
      }
    }
    if (this.#inItems && this.#itemStart >= 0) this.#item.push(chunk.slice(this.#itemStart));
    if (restStart >= 0) this.#rest.push(chunk.slice(restStart));
  }

  /** The list without its items, once every byte has been pushed; throws if it did not end. */
  end(): { rest: Record<string, unknown> } {
    if (this.#depth !== 0 || this.#inString) {
      throw new Error(`the list ended inside its JSON (${this.#items} items read)`);
    }
    const rest = JSON.parse(this.#decoder.decode(concatBytes(this.#rest)));
    if (typeof rest !== "object" || rest === null || Array.isArray(rest)) {
      throw new Error("the answer is not a JSON object");
    }
    return { rest };
  }

  #isItemsKey(): boolean {
    return this.#topString === "items";
  }

  #keepTopString(chunk: Uint8Array, from: number, to: number) {
    if (!this.#inTopString || this.#topString!.length > 5) return;
    this.#topString += String.fromCharCode(...chunk.subarray(from, Math.min(to, from + 6)));
  }

  #endItem(chunk: Uint8Array, end: number) {
    const piece = chunk.subarray(this.#itemStart, end + 1);
    const bytes = this.#item.length ? concatBytes([...this.#item, piece]) : piece;
    this.#item = [];
    this.#itemStart = -1;
    this.#items++;
    this.#onItem(JSON.parse(this.#decoder.decode(bytes)));
  }
}

/**
 * A list answer's body, JSON or protobuf, read item by item into `into`, each kept in the cache's
 * `form`; answers the list's resourceVersion. The client's list and bench/wire-forms.ts read
 * through this one path.
 */
export async function readListBody(
  body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  protobuf: boolean,
  form: CachedForm,
  into: KubeObject[],
): Promise<string> {
  const keep = (item: unknown) => into.push(form.keep(item as KubeObject));
  const reader = protobuf ? new ProtobufListItems(keep, form.view) : new ListItemsReader(keep);
  for await (const chunk of body) reader.push(chunk);
  const ended = reader.end();
  const metadata = ("rest" in ended ? ended.rest.metadata : ended.metadata) as
    | { resourceVersion?: string }
    | undefined;
  return metadata?.resourceVersion ?? "";
}

function notAnObject(index: number): Error {
  return new Error(`item ${index} of the list is not a JSON object`);
}
