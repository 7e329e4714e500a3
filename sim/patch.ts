/**
 * The three client-computed patch types: JSON patch (RFC 6902), JSON merge patch (RFC 7386)
 * and strategic merge patch, the last for the fields edgeroll and kubectl touch.
 */
import { ApiError } from "./status.ts";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonMap = { [key: string]: Json };

/** Whether `value` is a JSON object (not null, not a list), its members of type `T`. */
export function isMap<T = Json>(value: unknown): value is { [key: string]: T } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function invalidPatch(message: string): ApiError {
  return new ApiError(422, "Invalid", message);
}

/** JSON equality as the API server's `test` has it: an object's members in any order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  const bRecord = b as Record<string, unknown>;
  return aKeys.length === Object.keys(b).length &&
    aKeys.every((k) => k in bRecord && sameJson((a as Record<string, unknown>)[k], bRecord[k]));
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw invalidPatch(`invalid JSON pointer "${pointer}"`);
  return pointer.slice(1).split("/").map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function walk(doc: Json, tokens: string[], pointer: string): Json {
  let cursor: Json = doc;
  for (const token of tokens) {
    if (Array.isArray(cursor)) cursor = cursor[arrayIndex(cursor, token, pointer, false)];
    else if (isMap(cursor) && Object.hasOwn(cursor, token)) cursor = cursor[token];
    else throw invalidPatch(`doc is missing path: "${pointer}"`);
    if (cursor === undefined) throw invalidPatch(`doc is missing path: "${pointer}"`);
  }
  return cursor;
}

function arrayIndex(list: Json[], token: string, pointer: string, forInsert: boolean): number {
  if (forInsert && token === "-") return list.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw invalidPatch(`invalid array index in "${pointer}"`);
  const index = Number(token);
  if (index > list.length || (!forInsert && index === list.length)) {
    throw invalidPatch(`array index out of bounds in "${pointer}"`);
  }
  return index;
}

interface JsonPatchOperation {
  op: string;
  path: string;
  from?: string;
  value?: Json;
}

/** Applies an RFC 6902 JSON patch; returns a new document. */
export function applyJsonPatch(original: Json, operations: unknown): Json {
  if (!Array.isArray(operations)) {
    throw new ApiError(400, "BadRequest", "json patch must be a list of operations");
  }
  let doc = structuredClone(original);
  const set = (pointer: string, value: Json, insert: boolean) => {
    const tokens = parsePointer(pointer);
    if (tokens.length === 0) {
      doc = value;
      return;
    }
    const parent = walk(doc, tokens.slice(0, -1), pointer);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) {
      const index = arrayIndex(parent, last, pointer, true);
      if (insert) parent.splice(index, 0, value);
      else parent[index] = value;
    } else if (isMap(parent)) {
      if (!insert && !Object.hasOwn(parent, last)) {
        throw invalidPatch(`doc is missing key: "${pointer}"`);
      }
      parent[last] = value;
    } else {
      throw invalidPatch(`doc is missing path: "${pointer}"`);
    }
  };
  const remove = (pointer: string): Json => {
    const tokens = parsePointer(pointer);
    const parent = walk(doc, tokens.slice(0, -1), pointer);
    const last = tokens[tokens.length - 1];
    if (Array.isArray(parent)) {
      return parent.splice(arrayIndex(parent, last, pointer, false), 1)[0];
    }
    if (isMap(parent) && Object.hasOwn(parent, last)) {
      const value = parent[last];
      delete parent[last];
      return value;
    }
    throw invalidPatch(`doc is missing path: "${pointer}"`);
  };
  for (const raw of operations as JsonPatchOperation[]) {
    if (!isMap(raw) || typeof raw.path !== "string") {
      throw new ApiError(400, "BadRequest", `invalid json patch operation: ${JSON.stringify(raw)}`);
    }
    switch (raw.op) {
      case "add":
        set(raw.path, structuredClone(raw.value ?? null), true);
        break;
      case "replace":
        walk(doc, parsePointer(raw.path), raw.path);
        set(raw.path, structuredClone(raw.value ?? null), false);
        break;
      case "remove":
        remove(raw.path);
        break;
      case "move":
        set(raw.path, remove(String(raw.from)), true);
        break;
      case "copy":
        set(raw.path, structuredClone(walk(doc, parsePointer(String(raw.from)), raw.path)), true);
        break;
      case "test": {
        const actual = walk(doc, parsePointer(raw.path), raw.path);
        if (!sameJson(actual, raw.value)) {
          throw invalidPatch(`testing value ${raw.path} failed`);
        }
        break;
      }
      default:
        throw new ApiError(400, "BadRequest", `Unexpected kind: ${raw.op}`);
    }
  }
  return doc;
}

/** Applies an RFC 7386 merge patch: maps merge, null deletes, everything else replaces. */
export function applyMergePatch(original: Json, patch: Json): Json {
  if (!isMap(patch)) return structuredClone(patch);
  const out: JsonMap = isMap(original) ? { ...original } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key] ?? null, value);
  }
  return out;
}

/**
 * Merge keys of the lists that strategic merge patch merges element by element, by field
 * name. Kubernetes attaches them to Go struct fields; within the kinds the simulator serves a
 * field name has one meaning, so the name alone decides. Lists not named here are replaced.
 */
export const MERGE_KEYS: Readonly<Record<string, string>> = {
  containers: "name",
  initContainers: "name",
  ephemeralContainers: "name",
  env: "name",
  ports: "containerPort",
  volumes: "name",
  volumeMounts: "mountPath",
  volumeDevices: "devicePath",
  imagePullSecrets: "name",
  hostAliases: "ip",
  conditions: "type",
  ownerReferences: "uid",
  resourceClaims: "name",
  topologySpreadConstraints: "topologyKey",
};

/** Lists of scalars that strategic merge treats as sets. */
const SCALAR_MERGE_LISTS = new Set(["finalizers"]);

const DIRECTIVE = "$patch";
const SET_ORDER = "$setElementOrder/";
const DELETE_FROM_LIST = "$deleteFromPrimitiveList/";
const RETAIN_KEYS = "$retainKeys";

/**
 * Applies a strategic merge patch: like a merge patch, except that the lists named in
 * `MERGE_KEYS` merge by key and accept `$patch: delete|replace|merge` elements,
 * `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`, and `$retainKeys`
 * (which kubectl sends for `updateStrategy`) drops the keys it does not list.
 */
export function applyStrategicMergePatch(original: Json, patch: Json): Json {
  if (!isMap(patch)) return structuredClone(patch);
  if (patch[DIRECTIVE] === "replace") {
    const { [DIRECTIVE]: _, ...rest } = patch;
    return structuredClone(rest);
  }
  if (patch[DIRECTIVE] === "delete") return null;
  const out: JsonMap = isMap(original) ? { ...original } : {};
  const retain = patch[RETAIN_KEYS];
  if (Array.isArray(retain)) {
    for (const key of Object.keys(out)) if (!retain.includes(key)) delete out[key];
  }
  for (const [key, value] of Object.entries(patch)) {
    if (key === DIRECTIVE || key === RETAIN_KEYS || key.startsWith(SET_ORDER)) continue;
    if (key.startsWith(DELETE_FROM_LIST)) {
      const field = key.slice(DELETE_FROM_LIST.length);
      const current = out[field];
      if (Array.isArray(current) && Array.isArray(value)) {
        out[field] = current.filter((item) => !value.includes(item));
      }
      continue;
    }
    if (value === null) {
      delete out[key];
    } else if (Array.isArray(value) && MERGE_KEYS[key]) {
      out[key] = mergeKeyedList(out[key], value, MERGE_KEYS[key], patch[SET_ORDER + key]);
    } else if (Array.isArray(value) && SCALAR_MERGE_LISTS.has(key)) {
      const current = Array.isArray(out[key]) ? out[key] as Json[] : [];
      out[key] = [...current, ...value.filter((v) => !current.includes(v))];
    } else if (isMap(value)) {
      const merged = applyStrategicMergePatch(out[key] ?? null, value);
      if (merged === null) delete out[key];
      else out[key] = merged;
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out;
}

function mergeKeyedList(current: Json, patch: Json[], mergeKey: string, order: Json): Json[] {
  if (patch.some((item) => isMap(item) && item[DIRECTIVE] === "replace")) {
    return patch.filter((item) => !(isMap(item) && item[DIRECTIVE] === "replace"));
  }
  const items = Array.isArray(current) ? [...current] : [];
  const keyOf = (item: Json) => isMap(item) ? JSON.stringify(item[mergeKey] ?? null) : undefined;
  for (const element of patch) {
    if (!isMap(element)) {
      items.push(element);
      continue;
    }
    const index = items.findIndex((item) => keyOf(item) === keyOf(element));
    if (element[DIRECTIVE] === "delete") {
      if (index >= 0) items.splice(index, 1);
    } else if (index >= 0) {
      items[index] = applyStrategicMergePatch(items[index], element);
    } else {
      items.push(applyStrategicMergePatch(null, element));
    }
  }
  if (!Array.isArray(order)) return items;
  // `$setElementOrder` lists the wanted order by merge key; unlisted items keep their place after.
  const rank = new Map(order.map((entry, i) => [keyOf(entry), i]));
  return items
    .map((item, i) => ({ item, i, r: rank.get(keyOf(item)) ?? order.length + i }))
    .sort((a, b) => a.r - b.r)
    .map((entry) => entry.item);
}
