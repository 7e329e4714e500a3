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

/**
 * What of a node decides which pods a set wants there or may touch: its labels, whether it is
 * unschedulable, its taints and its Ready status. The relay sends only this and the controller
 * fingerprints it, so a heartbeat (which changes none of it) is dropped by both.
 */
export function nodeSchedulingView(node: {
  metadata: { name?: string; labels?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
}) {
  const spec = (node.spec ?? {}) as { unschedulable?: boolean; taints?: unknown[] };
  const status = (node.status ?? {}) as { conditions?: { type: string; status?: string }[] };
  return {
    metadata: { name: node.metadata.name, labels: node.metadata.labels ?? {} },
    spec: { unschedulable: spec.unschedulable ?? false, taints: spec.taints ?? [] },
    status: {
      conditions: (status.conditions ?? []).filter((c) => c.type === "Ready")
        .map(({ type, status }) => ({ type, status })),
    },
  };
}
