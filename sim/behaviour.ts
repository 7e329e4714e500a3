/**
 * The seam between the API server (this room) and the simulated cluster's behaviour
 * (nodes, kubelets, scheduler, DaemonSet controller: `sim/cluster/`). The server only needs
 * these verbs; `startSim` takes any implementation (tests may pass a smaller one).
 */
import type { Store } from "./store.ts";
import { type Durations, startClusterBehaviour } from "./cluster/mod.ts";

export interface BehaviourOptions {
  nodes: number;
  zones: number;
  speed: number;
  /** Simulated durations other than the defaults (seconds, before the speed factor). */
  durations?: Partial<Durations>;
}

export interface ClusterBehaviour {
  stop(): void | Promise<void>;
  disconnect?(node: string): void;
  reconnect?(node: string): void;
  setNotReady?(node: string): void;
  setReady?(node: string): void;
  setSpeed?(speed: number): void;
}

export type StartBehaviour = (store: Store, options: BehaviourOptions) => ClusterBehaviour;

export const NODE_ACTIONS = {
  disconnect: "disconnect",
  reconnect: "reconnect",
  notready: "setNotReady",
  ready: "setReady",
} as const satisfies Record<string, keyof ClusterBehaviour>;

/** The simulated cluster of `sim/cluster/`: nodes, kubelets, scheduler, controllers. */
export const clusterBehaviour: StartBehaviour = (store, options) =>
  startClusterBehaviour(store, options);
