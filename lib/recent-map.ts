/**
 * The controller's memory of things callers or the cluster name (tokens, node names, set keys):
 * a Map of at most `max` entries. Setting an entry makes it the newest; past `max`, the oldest
 * is forgotten. Nothing kept here is a decision: forgetting costs a request, never correctness.
 */
export class RecentMap<K, V> {
  readonly #entries = new Map<K, V>();

  constructor(readonly max: number) {}

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  set(key: K, value: V): void {
    this.#entries.delete(key); // re-inserted last: the map's order is its age
    this.#entries.set(key, value);
    if (this.#entries.size > this.max) this.#entries.delete(this.#entries.keys().next().value!);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  /** The keys, oldest first (a copy: deleting while going through them is safe). */
  keys(): K[] {
    return [...this.#entries.keys()];
  }
}
