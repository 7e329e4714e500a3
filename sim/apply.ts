/**
 * Server-side apply (`application/apply-patch+yaml`), enough for `kubectl apply
 * --server-side` and controllers that apply: the applied configuration is merged into the
 * live object (maps by key, keyed lists by merge key, other lists replaced), the fields a
 * manager applied are recorded in `metadata.managedFields` (FieldsV1), fields it applied
 * before and no longer applies are removed, and a value owned by another applier is a 409
 * conflict unless `force=true`, which takes the field over.
 *
 * Writes that are not applies do not record ownership here (see ADR 0008).
 */
import { applyStrategicMergePatch, isMap, type Json, MERGE_KEYS } from "./patch.ts";
import { ApiError } from "./status.ts";
import type { KubeObject } from "./store.ts";

type JsonMap = { [key: string]: Json };
type FieldsV1 = { [key: string]: FieldsV1 };

const IDENTITY = new Set(["apiVersion", "kind"]);
const SERVER_OWNED_META = new Set([
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "name",
  "namespace",
]);

/** Leaf paths (`f:spec`, `k:{"name":"c"}`, `.`) of the fields a configuration sets. */
export function fieldPaths(value: Json, path: string[] = []): string[][] {
  if (isMap(value)) {
    const entries = Object.entries(value).filter(([key]) => {
      if (path.length === 0) return !IDENTITY.has(key);
      if (path.length === 1 && path[0] === "f:metadata") return !SERVER_OWNED_META.has(key);
      return true;
    });
    // An empty map is owned as a leaf, except metadata, which always carries name/namespace.
    if (entries.length === 0) return path.length > 0 && path[0] !== "f:metadata" ? [path] : [];
    return entries.flatMap(([key, child]) => {
      const here = [...path, `f:${key}`];
      const mergeKey = MERGE_KEYS[key];
      if (Array.isArray(child) && mergeKey) {
        return child.filter(isMap).flatMap((item) => {
          const itemPath = [...here, `k:${JSON.stringify({ [mergeKey]: item[mergeKey] })}`];
          return [[...itemPath, "."], ...fieldPaths(item, itemPath)];
        });
      }
      return fieldPaths(child, here);
    });
  }
  return [path];
}

function toFieldsV1(paths: string[][]): FieldsV1 {
  const root: FieldsV1 = {};
  for (const path of paths) {
    let node = root;
    for (const part of path) node = node[part] ??= {};
  }
  return root;
}

function fromFieldsV1(tree: FieldsV1, path: string[] = []): string[][] {
  const entries = Object.entries(tree);
  if (entries.length === 0) return path.length > 0 ? [path] : [];
  return entries.flatMap(([key, child]) => fromFieldsV1(child, [...path, key]));
}

/** Finds the parent container and the slot a path points at. */
function locate(
  root: Json,
  path: string[],
): { parent: JsonMap | Json[]; slot: string | number } | undefined {
  let cursor: Json = root;
  let parent: JsonMap | Json[] | undefined;
  let slot: string | number | undefined;
  for (const part of path) {
    if (part === ".") break;
    if (cursor === undefined || cursor === null) return undefined;
    if (part.startsWith("f:") && isMap(cursor)) {
      parent = cursor;
      slot = part.slice(2);
      cursor = cursor[slot];
    } else if (part.startsWith("k:") && Array.isArray(cursor)) {
      const key = JSON.parse(part.slice(2)) as JsonMap;
      const list: Json[] = cursor;
      const index = list.findIndex((item) =>
        isMap(item) &&
        Object.entries(key).every(([k, v]) => JSON.stringify(item[k]) === JSON.stringify(v))
      );
      if (index < 0) return undefined;
      parent = list;
      slot = index;
      cursor = list[index];
    } else {
      return undefined;
    }
  }
  return parent === undefined || slot === undefined ? undefined : { parent, slot };
}

function valueAt(root: Json, path: string[]): Json | undefined {
  const at = locate(root, path);
  if (!at) return undefined;
  return Array.isArray(at.parent) ? at.parent[at.slot as number] : at.parent[at.slot as string];
}

function removeAt(root: Json, path: string[]): void {
  const at = locate(root, path);
  if (!at) return;
  if (Array.isArray(at.parent)) at.parent.splice(at.slot as number, 1);
  else delete at.parent[at.slot as string];
}

function pathText(path: string[]): string {
  return path.filter((p) => p !== ".").map((p) =>
    p.startsWith("f:")
      ? `.${p.slice(2)}`
      : `[${
        Object.entries(JSON.parse(p.slice(2))).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(
          ",",
        )
      }]`
  ).join("");
}

interface ManagedFieldsEntry {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  time: string;
  fieldsType: "FieldsV1";
  fieldsV1: FieldsV1;
  subresource?: string;
}

/**
 * Applies `config` as `manager` onto `live` (undefined: the object is created). Returns the
 * object to store, with managedFields updated.
 */
export function serverSideApply(
  live: KubeObject | undefined,
  config: KubeObject,
  options: { manager: string; force: boolean; time: string; subresource?: string },
): KubeObject {
  const applied = fieldPaths(config as unknown as Json).filter((p) =>
    options.subresource !== "status" || p[0] === "f:status"
  );
  const appliedKeys = new Set(applied.map((p) => p.join("\u0000")));
  const entries: ManagedFieldsEntry[] = structuredClone(
    (live?.metadata.managedFields as ManagedFieldsEntry[] | undefined) ?? [],
  );
  const mine = entries.find((e) => e.manager === options.manager && e.operation === "Apply");
  const others = entries.filter((e) => e !== mine && e.operation === "Apply");
  const liveJson = (live ?? {}) as unknown as Json;
  const conflicts: { manager: string; path: string[] }[] = [];
  for (const other of others) {
    const owned = fromFieldsV1(other.fieldsV1);
    const keep = owned.filter((path) => {
      if (!appliedKeys.has(path.join("\u0000")) || path[path.length - 1] === ".") return true;
      const same = JSON.stringify(valueAt(liveJson, path)) ===
        JSON.stringify(valueAt(config as unknown as Json, path));
      if (same) return true; // shared ownership
      if (!options.force) conflicts.push({ manager: other.manager, path });
      return false;
    });
    other.fieldsV1 = toFieldsV1(keep);
  }
  if (conflicts.length > 0) {
    const causes = conflicts.map((c) => ({
      reason: "FieldManagerConflict",
      message: `conflict with "${c.manager}"`,
      field: pathText(c.path),
    }));
    throw new ApiError(
      409,
      "Conflict",
      `Apply failed with ${conflicts.length} conflict${conflicts.length > 1 ? "s" : ""}: ${
        causes.map((c) => `${c.message}: ${c.field}`).join(", ")
      }`,
      causes,
    );
  }
  let merged = applyStrategicMergePatch(
    structuredClone(liveJson),
    config as unknown as Json,
  ) as JsonMap;
  const ownedByOthers = new Set(
    others.flatMap((e) => fromFieldsV1(e.fieldsV1)).map((p) => p.join("\u0000")),
  );
  // Fields this manager applied before and dropped now go away, unless someone else owns them.
  const dropped = mine ? fromFieldsV1(mine.fieldsV1) : [];
  const removals = dropped.filter((p) =>
    !appliedKeys.has(p.join("\u0000")) && !ownedByOthers.has(p.join("\u0000"))
  );
  for (const path of removals.sort((a, b) => b.length - a.length)) {
    removeAt(merged, path);
    // A map left empty by the removal goes too, unless the applier sets it (as `{}`).
    for (let depth = path.length - 1; depth > 0; depth--) {
      const parent = path.slice(0, depth);
      const value = valueAt(merged, parent);
      if (!isMap(value) || Object.keys(value).length > 0) break;
      if (appliedKeys.has(parent.join("\u0000"))) break;
      removeAt(merged, parent);
    }
  }
  merged = merged as JsonMap;
  const entry: ManagedFieldsEntry = {
    manager: options.manager,
    operation: "Apply",
    apiVersion: String(config.apiVersion),
    time: options.time,
    fieldsType: "FieldsV1",
    fieldsV1: toFieldsV1(applied),
    ...(options.subresource ? { subresource: options.subresource } : {}),
  };
  const next = merged as unknown as KubeObject;
  next.metadata.managedFields = [
    ...others.filter((e) => Object.keys(e.fieldsV1).length > 0),
    entry,
  ];
  return next;
}
