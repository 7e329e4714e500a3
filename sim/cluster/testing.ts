/**
 * Helpers for tests of the simulated cluster: a bounded wait for a state (never a timed
 * assertion), and a started cluster on a fresh store that the test stops in `finally`.
 */
import { Store } from "../store.ts";
import {
  type ClusterBehaviour,
  type ClusterBehaviourOptions,
  startClusterBehaviour,
} from "./mod.ts";

/** Polls `probe` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Runs `body` against a fresh store and cluster (fast, seeded, quiet), stopping it after. */
export async function withCluster(
  options: Partial<ClusterBehaviourOptions>,
  body: (store: Store, cluster: ClusterBehaviour) => Promise<void>,
): Promise<void> {
  const store = new Store();
  const cluster = startClusterBehaviour(store, {
    nodes: 3,
    speed: 100,
    seed: 42,
    log: () => {},
    ...options,
  });
  try {
    await body(store, cluster);
  } finally {
    cluster.stop();
  }
}
