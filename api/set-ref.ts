/**
 * Which set: its kind as it appears in URLs, namespace and name, and the one string form of
 * that (`advanceddaemonsets/ns/name`) that logs, queue keys and answers use.
 */

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

/** The set a key names; anything `setKey` did not write is refused. */
export function parseSetKey(key: string): SetRef {
  const [kind, namespace, name, ...rest] = key.split("/");
  if (!setKinds.includes(kind as SetKind) || !namespace || !name || rest.length > 0) {
    throw new Error(`not a set key: ${JSON.stringify(key)}`);
  }
  return { kind: kind as SetKind, namespace, name };
}
