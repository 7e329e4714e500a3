/**
 * For tests of the simulated cluster: a started cluster on a fresh store that the test stops
 * in `finally` (waits for a state are `lib/eventually.ts`).
 */
import { Store } from "../store.ts";
import {
  type ClusterBehaviour,
  type ClusterBehaviourOptions,
  startClusterBehaviour,
} from "./mod.ts";

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
