/**
 * What `startSim` gives the simulator's HTTP layer: the store, the registry of resource types,
 * the bearer tokens and who they are, the faults, the request counters, the cluster's
 * behaviour, the CRD conversions and the webhook client.
 */
import type { Store } from "./store.ts";
import type { ResourceRegistry } from "./resources.ts";
import type { FaultInjector, RequestStats } from "./faults.ts";
import type { ClusterBehaviour } from "./behaviour.ts";
import type { Conversions } from "./conversion.ts";
import type { WebhookClient } from "./webhook-client.ts";

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
}

export interface ServerContext {
  store: Store;
  registry: ResourceRegistry;
  /** Bearer tokens the API accepts, and who they are (TokenReview answers with this). */
  tokens: Map<string, UserInfo>;
  faults: FaultInjector;
  stats: RequestStats;
  behaviour: () => ClusterBehaviour;
  /** How often a watch that allows bookmarks gets one. */
  bookmarkIntervalMs: number;
  /** Calls CRDs' conversion webhooks and keeps the views they answered. */
  conversions: Conversions;
  /** Calls webhooks: conversion and admission. */
  webhooks: WebhookClient;
  /** Told when the admin API cuts or heals a node's link, after the behaviour was. */
  onNodeLink?: (node: string, link: "disconnect" | "reconnect") => Promise<void>;
}
