/**
 * Stable hashes for revision and pod names: FNV-1a over a canonical JSON (object keys sorted), so
 * the same template always gives the same hash whatever order its keys were written in. Encoded
 * with Kubernetes' "safe" alphabet (no vowels, no 0/1/3), as upstream's `ComputeHash` does.
 * In `api/` because the hashes are part of what edgeroll writes (revision labels, pod names)
 * and every room that names or fingerprints objects uses them.
 */

const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789";

/** JSON with object keys sorted at every level; `undefined` members dropped as JSON does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of utf8(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

const fnv64Prime = 0x100000001b3n;
const mask64 = (1n << 64n) - 1n;

export function fnv1a64(text: string): bigint {
  let hash = 0xcbf29ce484222325n;
  for (const byte of utf8(text)) {
    hash ^= BigInt(byte);
    hash = (hash * fnv64Prime) & mask64;
  }
  return hash;
}

/** The decimal digits of `n`, each mapped into the safe alphabet. */
function safeEncode(n: number | bigint): string {
  return [...n.toString()].map((d) => safeAlphabet[d.charCodeAt(0) % safeAlphabet.length]).join("");
}

/** The revision hash of a pod template, with the collision count folded in (upstream style). */
export function templateHash(template: unknown, collisionCount: number): string {
  const text = canonicalJson(template) + (collisionCount > 0 ? `#${collisionCount}` : "");
  return safeEncode(fnv1a32(text));
}

/**
 * A 64-bit hash of `text` in base 27 (14 characters): short enough for pod names, with
 * collisions negligible in a fleet (a 32-bit hash collides with ~1% odds at 10,000 nodes).
 */
export function nameSuffix(text: string): string {
  let n = fnv1a64(text);
  const base = BigInt(safeAlphabet.length);
  let out = "";
  for (let i = 0; i < 14; i++) {
    out += safeAlphabet[Number(n % base)];
    n /= base;
  }
  return out;
}
