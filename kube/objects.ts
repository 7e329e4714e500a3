/**
 * Objects as kube/ moves them: wire (JSON) form, metadata as `api/` names it, the rest left
 * to whoever reads it.
 */
import type { ObjectMeta } from "../api/kube-objects.ts";

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

export function setKey(ref: SetRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** Client-node returns model objects holding `Date`s; JSON gives back the wire form. */
export function toWire<T>(value: unknown): T {
  return JSON.parse(JSON.stringify(value));
}
