/**
 * One holder per key at a time, others waiting their turn in order (controller-runtime's
 * guarantee that a key is never reconciled twice at once, for callers that are not its queue).
 * Only keys held or waited for are kept, so the map is bounded by the work in flight.
 */
export class KeyedLock {
  /** The last turn of each busy key: the next caller runs after it. */
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` once no earlier `run` of `key` is running or waiting. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key);
    const turn = Promise.withResolvers<void>();
    this.#tails.set(key, turn.promise);
    try {
      await before;
      return await work();
    } finally {
      turn.resolve();
      if (this.#tails.get(key) === turn.promise) this.#tails.delete(key);
    }
  }

  /** Keys held or waited for. */
  get size(): number {
    return this.#tails.size;
  }
}
