/**
 * The pods a bench process watches, by a key of its choosing and by node: a watch event updates
 * one pod and costs its node alone, where a pass over every pod per event grows with the fleet
 * squared (at 5,000 nodes it made the floor slower than a controller: ADR 0040).
 */
export class PodsByNode<P extends { spec?: { nodeName?: string } }> {
  readonly #pods = new Map<string, P>();
  readonly #keysOnNode = new Map<string, Set<string>>();

  constructor(private readonly keyOf: (pod: P) => string) {}

  /** Keeps `pod` (replacing the one of its key); answers the node the replaced one was on. */
  set(pod: P): string | undefined {
    const key = this.keyOf(pod);
    const replaced = this.delete(key);
    this.#pods.set(key, pod);
    const node = pod.spec?.nodeName ?? "";
    const keys = this.#keysOnNode.get(node) ?? new Set();
    this.#keysOnNode.set(node, keys.add(key));
    return replaced;
  }

  /** Forgets the pod of `key`; answers the node it was on. */
  delete(key: string): string | undefined {
    const pod = this.#pods.get(key);
    if (!pod) return undefined;
    this.#pods.delete(key);
    const node = pod.spec?.nodeName ?? "";
    this.#keysOnNode.get(node)?.delete(key);
    return node;
  }

  clear() {
    this.#pods.clear();
    this.#keysOnNode.clear();
  }

  /** The pods on `node`. */
  on(node: string): P[] {
    return [...this.#keysOnNode.get(node) ?? []].map((key) => this.#pods.get(key)!);
  }
}
