/**
 * The relay: watches AdvancedDaemonSets, DaemonSets edgeroll manages, their pods and all
 * nodes, and posts what changed to the controller's `/events` as Knative ApiServerSource
 * would (`dev.knative.apiserver.resource.*`, the object as data), trimmed to what the
 * controller reads and coalesced per object.
 */
import type { KubeConfig } from "../kube/config.ts";
import { group, plural, version } from "../api/advanced-daemonset.ts";
import { kruiseSetKind, setKindOf } from "../api/set-ref.ts";
import {
  kruiseApiVersion,
  kruiseGroup,
  kruiseKind,
  kruisePlural,
  kruiseStorageVersion,
} from "../api/kruise.ts";
import { isManagedDaemonSet } from "../api/openyurt.ts";
import type { Logger } from "../lib/log.ts";
import { type KubeObject, nodeSchedulingView, setChangeView } from "../kube/wire-objects.ts";
import { Fingerprints } from "../kube/fingerprints.ts";
import { pullForAnnotation } from "../api/image-pull.ts";
import { type BearerToken, EventSender } from "./sender.ts";
import {
  clientNodeWatch,
  type RunningWatch,
  startWatch,
  type WatchEventType,
  type WatchFn,
} from "../kube/watcher.ts";

export interface RelayOptions {
  kubeConfig: KubeConfig;
  /** The controller's base URL; events go to `${target}/events`. */
  target: string;
  token?: BearerToken;
  logger: Logger;
  flushMs?: number;
  idleMs?: number;
  timeoutSeconds?: number;
  /** Injected in tests; client-node's Watch otherwise. */
  watch?: WatchFn;
  fetch?: typeof fetch;
  /** Kruise compatibility mode: also Kruise's DaemonSets and their pods (ADR 0027). */
  kruise?: boolean;
}

const ceType: Record<WatchEventType, string> = {
  ADDED: "dev.knative.apiserver.resource.add",
  MODIFIED: "dev.knative.apiserver.resource.update",
  DELETED: "dev.knative.apiserver.resource.delete",
};

interface Source {
  path: string;
  apiVersion: string;
  kind: string;
  /** The part of the object the controller reads, or undefined to send nothing. */
  trim(object: KubeObject): KubeObject | undefined;
  /**
   * What of the object, unchanged, means nothing to send: nodes, their scheduling view (their
   * heartbeats, every 10 s per node, 500 a second at 5,000 nodes, change none of it); sets, all
   * but what the controller never reads (`setChangeView`: a DaemonSet's status the DaemonSet
   * controller writes). Not pods: their events matter by status, which the trim leaves out.
   */
  sameness?: (object: KubeObject) => unknown;
}

const kruiseSource: Source = {
  path: `/apis/${kruiseGroup}/${kruiseStorageVersion}/${kruisePlural}`,
  apiVersion: kruiseApiVersion,
  kind: kruiseKind,
  trim: (o) => ({ metadata: o.metadata }),
  sameness: setChangeView,
};

/** A controller owner reference to a set the relay reports; Kruise's only in Kruise mode. */
function isSetOwner(owner: { apiVersion: string; kind: string }, kruise: boolean): boolean {
  const setKind = setKindOf(owner.apiVersion, owner.kind);
  return setKind !== undefined && (kruise || setKind !== kruiseSetKind);
}

function sourcesOf(kruise: boolean): Source[] {
  return [
    ...baseSources(kruise),
    ...(kruise ? [kruiseSource] : []),
  ];
}

const baseSources = (kruise: boolean): Source[] => [
  {
    path: `/apis/${group}/${version}/${plural}`,
    apiVersion: `${group}/${version}`,
    kind: "AdvancedDaemonSet",
    trim: (o) => ({ metadata: o.metadata }),
    sameness: setChangeView,
  },
  {
    path: "/apis/apps/v1/daemonsets",
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    trim: (o) => isManagedDaemonSet(o) ? { metadata: o.metadata } : undefined,
    sameness: setChangeView,
  },
  {
    path: "/api/v1/pods",
    apiVersion: "v1",
    kind: "Pod",
    trim: (o) => {
      const { name, namespace, ownerReferences, annotations } = o.metadata;
      // A pod of an image pull Job calls the set it pulls for (ADR 0034).
      const pullFor = annotations?.[pullForAnnotation];
      if (pullFor !== undefined) {
        return { metadata: { name, namespace, annotations: { [pullForAnnotation]: pullFor } } };
      }
      const owner = ownerReferences?.find((r) => r.controller && isSetOwner(r, kruise));
      if (!owner) return undefined;
      return { metadata: { name, namespace, ownerReferences } };
    },
  },
  {
    path: "/api/v1/nodes",
    apiVersion: "v1",
    kind: "Node",
    trim: nodeSchedulingView,
    sameness: nodeSchedulingView,
  },
];

/**
 * The collections the relay lists and watches (its ClusterRoles are checked against them): the
 * base's, and what the kruise-compat overlay adds.
 */
export const watchedPaths: readonly string[] = sourcesOf(false).map((source) => source.path);
export const kruiseWatchedPaths: readonly string[] = [kruiseSource.path];

/** The object's API path, as ApiServerSource writes `subject`: `/api/v1/namespaces/ns/pods/x`. */
function subjectOf(path: string, namespace: string | undefined, name: string | undefined): string {
  if (!namespace) return `${path}/${name}`;
  const cut = path.lastIndexOf("/");
  return `${path.slice(0, cut)}/namespaces/${namespace}${path.slice(cut)}/${name}`;
}

export interface RunningRelay {
  sender: EventSender;
  watches: RunningWatch[];
  stop(): Promise<void>;
}

export function startRelay(options: RelayOptions): RunningRelay {
  const logger = options.logger;
  const sender = new EventSender({
    target: `${options.target.replace(/\/$/, "")}/events`,
    token: options.token,
    flushMs: options.flushMs,
    logger,
    fetch: options.fetch,
  });
  const watchFn = options.watch ?? clientNodeWatch(options.kubeConfig);
  const sources = sourcesOf(options.kruise ?? false);
  const watches = sources.map((source) => {
    /** What was last sent, by object, for sources where its sameness is nothing. */
    const lastSent = new Fingerprints();
    return startWatch(watchFn, {
      path: source.path,
      logger,
      idleMs: options.idleMs,
      timeoutSeconds: options.timeoutSeconds,
      onEvent: (type, object) => {
        const trimmed = source.trim(object);
        if (!trimmed) return;
        const { namespace, name } = object.metadata;
        // Kruise's DaemonSet and apps/v1's share a kind: the path tells them apart.
        const key = `${source.path}/${namespace ?? ""}/${name}`;
        if (
          source.sameness &&
          !lastSent.moved(key, source.sameness(object), type === "DELETED")
        ) return;
        sender.send(key, {
          type: ceType[type],
          subject: subjectOf(source.path, namespace, name),
          data: { apiVersion: source.apiVersion, kind: source.kind, ...trimmed },
        });
      },
    });
  });
  logger.info("relay started", { target: options.target, watches: sources.map((s) => s.path) });
  return {
    sender,
    watches,
    async stop() {
      await Promise.all(watches.map((w) => w.stop()));
      await sender.flush();
      await sender.stop();
    },
  };
}
