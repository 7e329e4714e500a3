/**
 * Which set: its kind as it appears in URLs, namespace and name, and the one string form of
 * that (`advanceddaemonsets/ns/name`) that logs, queue keys and answers use.
 */

import { group, kind as edgerollKind, plural, version } from "./advanced-daemonset.ts";
import {
  kruiseGroup,
  kruiseKind,
  kruisePlural,
  kruiseStorageVersion,
  kruiseVersionOf,
} from "./kruise.ts";

/**
 * The kinds of set edgeroll reconciles, as they appear in URLs: AdvancedDaemonSets, OpenYurt's
 * annotated `apps/v1` DaemonSets, and, in Kruise compatibility mode, Kruise's DaemonSets
 * (`daemonsets.apps.kruise.io`, as `kubectl` names them).
 */
export type SetKind = "advanceddaemonsets" | "daemonsets" | "daemonsets.apps.kruise.io";
export const kruiseSetKind = "daemonsets.apps.kruise.io" satisfies SetKind;
export const setKinds: readonly SetKind[] = ["advanceddaemonsets", "daemonsets", kruiseSetKind];

/** Where a custom resource kind of set is served, and the version edgeroll reads and writes. */
export interface CustomSetResource {
  group: string;
  version: string;
  plural: string;
}

/** The kinds of set that are custom resources; `daemonsets` is apps/v1. */
export const customSetResources: Partial<Record<SetKind, CustomSetResource>> = {
  advanceddaemonsets: { group, version, plural },
  [kruiseSetKind]: { group: kruiseGroup, version: kruiseStorageVersion, plural: kruisePlural },
};

/** The collection a kind of set is listed and watched at, across namespaces. */
export function setCollectionPath(kind: SetKind): string {
  const resource = customSetResources[kind];
  return resource
    ? `/apis/${resource.group}/${resource.version}/${resource.plural}`
    : "/apis/apps/v1/daemonsets";
}

export interface SetRef {
  kind: SetKind;
  namespace: string;
  name: string;
}

export function setKey(ref: SetRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** The set a key names; anything `setKey` did not write is refused. */
export function parseSetKey(key: string): SetRef {
  const [kind, namespace, name, ...rest] = key.split("/");
  if (!setKinds.includes(kind as SetKind) || !namespace || !name || rest.length > 0) {
    throw new Error(`not a set key: ${JSON.stringify(key)}`);
  }
  return { kind: kind as SetKind, namespace, name };
}

/**
 * The kind of set an object of this apiVersion and kind is (a set itself, or a pod's controller
 * owner reference), or undefined when it is no set edgeroll reconciles.
 */
export function setKindOf(apiVersion: string | undefined, kind: string): SetKind | undefined {
  if (kind === edgerollKind && (apiVersion ?? `${group}/`).startsWith(`${group}/`)) {
    return "advanceddaemonsets";
  }
  if (kind === "DaemonSet" && (apiVersion ?? "apps/v1") === "apps/v1") return "daemonsets";
  if (kind === kruiseKind && kruiseVersionOf(apiVersion) !== undefined) return kruiseSetKind;
  return undefined;
}
