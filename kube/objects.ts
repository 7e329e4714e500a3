/**
 * The few facts kube/ needs about the objects it moves, in wire (JSON) form. The full
 * schemas live in `api/`; kube/ only needs names, versions and owners to route calls.
 */

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: {
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
  }[];
  creationTimestamp?: string;
  deletionTimestamp?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  items: T[];
  /** The list's resourceVersion, where a watch resumes from. */
  resourceVersion: string;
}

/** The two kinds of set edgeroll reconciles, as they appear in URLs. */
export type SetKind = "advanceddaemonsets" | "daemonsets";
export const setKinds: readonly SetKind[] = ["advanceddaemonsets", "daemonsets"];

export interface SetRef {
  kind: SetKind;
  namespace: string;
  name: string;
}

export const advancedDaemonSetGroup = "apps.edgeroll.dev";
export const advancedDaemonSetVersion = "v1alpha1";

export function setKey(ref: SetRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** Client-node returns model objects holding `Date`s; JSON gives back the wire form. */
export function toWire<T>(value: unknown): T {
  return JSON.parse(JSON.stringify(value));
}
