/**
 * What the dashboard reads, with the caller's kubeconfig: the managed sets, and one set as the
 * controller would plan it now (`status`'s reading: the set, its revisions, its pods and the
 * nodes, pods and nodes from watch-backed caches, kube/cache.ts), with its latest Events. A
 * change in a cache is reported to the streams, which read their set again (ADR 0045).
 */
import { plan } from "../../engine/plan.ts";
import { setKey, type SetRef } from "../../api/set-ref.ts";
import { writtenStatus } from "../../api/written-status.ts";
import { clientNodeApi } from "../../kube/api.ts";
import { SnapshotCache } from "../../kube/cache.ts";
import { KubeClient } from "../../kube/client.ts";
import type { KubeConfig } from "../../kube/config.ts";
import { userCalls } from "../../kube/user-calls.ts";
import { clientNodeWatch } from "../../kube/watcher.ts";
import type { Logger } from "../../lib/log.ts";
import { listManagedSets, withRolloutStatuses } from "../../controller/tick.ts";
import { type SetEvent, type SetView, setView } from "./tiles.ts";

/** One line of the list page: a set as its last written status says. */
export interface SetSummary {
  ref: SetRef;
  key: string;
  desired: number;
  updated: number;
  unavailable: number;
  /** The conditions that are True, by type. */
  conditions: string[];
}

export interface Fleet {
  sets(): Promise<SetSummary[]>;
  /** The set now, or undefined when it does not exist. */
  view(ref: SetRef): Promise<SetView | undefined>;
  /** Calls `listener` on every change the caches see; returns how to stop. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

/** RFC 3339 to the second, as kubectl shows times. */
/** What the page reads of an Event, in wire form. */
interface CoreEvent {
  type?: string;
  reason?: string;
  message?: string;
  lastTimestamp?: string;
  eventTime?: string;
  metadata: { creationTimestamp?: string };
}

const timeOf = (at: Date | string | undefined) =>
  at === undefined ? "" : new Date(at).toISOString().replace(/\.\d{3}Z$/, "Z");

/** Events shown on a set's page, newest first. */
const eventsShown = 12;

export function kubeFleet(kc: KubeConfig, logger: Logger, clock = Date.now): Fleet {
  const kube = new KubeClient(clientNodeApi(kc), {
    component: "edgeroll-dashboard",
    cache: (api) => new SnapshotCache({ api, watch: clientNodeWatch(kc), logger }),
  });
  const user = userCalls(kc);
  const listeners = new Set<() => void>();
  kube.cache!.onChange(() => listeners.forEach((l) => l()));

  async function events(ref: SetRef, uid: string | undefined): Promise<SetEvent[]> {
    if (!uid) return [];
    const items = await user.listEvents({
      namespace: ref.namespace,
      fieldSelector: `involvedObject.uid=${uid}`,
    }) as CoreEvent[];
    return items
      .map((e) => ({
        type: e.type ?? "Normal",
        reason: e.reason ?? "",
        message: e.message ?? "",
        at: timeOf(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp),
      }))
      .sort((a, b) => b.at.localeCompare(a.at))
      .slice(0, eventsShown);
  }

  return {
    async sets() {
      const sets = await withRolloutStatuses(kube, (await listManagedSets(kube)).sets);
      return sets.map(({ ref, object, rolloutStatus }) => {
        const status = (writtenStatus(ref.kind, { set: object, rolloutStatus }) ?? {}) as {
          desiredNumberScheduled?: number;
          updatedNumberScheduled?: number;
          numberUnavailable?: number;
          conditions?: { type: string; status: string }[];
        };
        return {
          ref,
          key: setKey(ref),
          desired: status.desiredNumberScheduled ?? 0,
          updated: status.updatedNumberScheduled ?? 0,
          unavailable: status.numberUnavailable ?? 0,
          conditions: (status.conditions ?? []).filter((c) => c.status === "True").map((c) =>
            c.type
          ),
        };
      }).sort((a, b) => a.key.localeCompare(b.key));
    },
    async view(ref) {
      const snapshot = await kube.readSnapshot(ref);
      if (!snapshot) return undefined;
      const planned = plan(snapshot, clock());
      return setView(ref, snapshot, planned, await events(ref, snapshot.set.metadata.uid));
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await kube.cache!.close();
    },
  };
}
