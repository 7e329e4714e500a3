/**
 * Which objects moved in what a reader cares about: a 64-bit hash of each object's view, by key,
 * in a bounded memory. A forgotten key only counts as moved once more (a request, never a
 * decision). Node heartbeats, a DaemonSet's status written by its own controller: changes whose
 * view stays the same are nothing to whoever asks this.
 */
import { fnv1a64 } from "../api/hash.ts";
import { RecentMap } from "../lib/recent-map.ts";

export class Fingerprints {
  /** Keys remembered, at most: far above any fleet's count of nodes or sets. */
  static readonly maxRemembered = 50_000;
  readonly #seen = new RecentMap<string, bigint>(Fingerprints.maxRemembered);

  get size(): number {
    return this.#seen.size;
  }

  /** Whether `view` moved since `key` was last seen (a deletion always has); remembers it. */
  moved(key: string, view: unknown, deleted = false): boolean {
    if (deleted) {
      this.#seen.delete(key);
      return true;
    }
    const fingerprint = fnv1a64(JSON.stringify(view));
    const known = this.#seen.get(key);
    this.#seen.set(key, fingerprint);
    return known !== fingerprint;
  }

  /** Forgets every key `keep` refuses (gone from a relist). */
  forgetUnless(keep: (key: string) => boolean): void {
    for (const key of this.#seen.keys()) if (!keep(key)) this.#seen.delete(key);
  }
}
