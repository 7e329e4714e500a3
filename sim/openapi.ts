/**
 * OpenAPI v3 documents, as much of them as kubectl reads: `/openapi/v3` lists one document
 * per group/version; each document has the resource paths with their operations
 * (`x-kubernetes-group-version-kind`, `x-kubernetes-action`, the query parameters kubectl
 * checks for, such as `fieldValidation`), and one schema per kind (a CRD's own schema).
 *
 * Patch operations do not list strategic merge patch as a request body: kubectl then
 * computes its strategic merge patches from its compiled-in Go types (exact for the
 * built-in kinds) rather than from a schema the simulator would have to reproduce in full.
 * See ADR 0008.
 */
import type { ResourceRegistry, ResourceType } from "./resources.ts";
import { KUBERNETES_VERSION } from "./discovery.ts";

function docPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

function hashOf(text: string): string {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16).toUpperCase().padStart(8, "0");
}

function fingerprint(types: ResourceType[]): string {
  return hashOf(JSON.stringify(types.map((t) => [t.kind, t.plural, t.custom?.schema])));
}

export function openApiIndex(registry: ResourceRegistry): Record<string, unknown> {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  const versions = [{ name: "", versions: ["v1"] }, ...registry.groups()];
  for (const group of versions) {
    for (const version of group.versions) {
      const path = docPath(group.name, version);
      const hash = fingerprint(registry.inGroupVersion(group.name, version));
      paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${hash}` };
    }
  }
  return { paths };
}

const queryParam = (name: string) => ({ name, in: "query", schema: { type: "string" } });
const WRITE_PARAMS = ["dryRun", "fieldManager", "fieldValidation"].map(queryParam);
const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/apply-patch+yaml",
];

function schemaName(type: ResourceType): string {
  return `io.k8s.sim.${type.group || "core"}.${type.version}.${type.kind}`;
}

function operation(type: ResourceType, action: string, extra: Record<string, unknown> = {}) {
  const ref = { $ref: `#/components/schemas/${schemaName(type)}` };
  return {
    operationId: `${action}${type.kind}`,
    "x-kubernetes-action": action,
    "x-kubernetes-group-version-kind": {
      group: type.group,
      version: type.version,
      kind: type.kind,
    },
    responses: { "200": { content: { "application/json": { schema: ref } } } },
    ...extra,
  };
}

function pathsOf(type: ResourceType): Record<string, unknown> {
  const prefix = `/${docPath(type.group, type.version)}`;
  const base = type.namespaced
    ? `${prefix}/namespaces/{namespace}/${type.plural}`
    : `${prefix}/${type.plural}`;
  const body = {
    content: {
      "application/json": { schema: { $ref: `#/components/schemas/${schemaName(type)}` } },
    },
  };
  const patch = {
    parameters: [...WRITE_PARAMS, queryParam("force")],
    requestBody: {
      content: Object.fromEntries(PATCH_TYPES.map((t) => [t, { schema: { type: "object" } }])),
    },
  };
  const item = {
    get: operation(type, "get"),
    put: operation(type, "put", { parameters: WRITE_PARAMS, requestBody: body }),
    patch: operation(type, "patch", patch),
    delete: operation(type, "delete", { parameters: [queryParam("dryRun")] }),
  };
  const paths: Record<string, unknown> = {
    [base]: {
      get: operation(type, "list"),
      post: operation(type, "post", { parameters: WRITE_PARAMS, requestBody: body }),
      delete: operation(type, "deletecollection"),
    },
    [`${base}/{name}`]: item,
  };
  if (type.statusSubresource) {
    paths[`${base}/{name}/status`] = {
      get: operation(type, "get"),
      put: operation(type, "put", { parameters: WRITE_PARAMS, requestBody: body }),
      patch: operation(type, "patch", patch),
    };
  }
  return paths;
}

function kindSchema(type: ResourceType): Record<string, unknown> {
  const gvk = [{ group: type.group, version: type.version, kind: type.kind }];
  const own = type.custom?.schema ?? {
    type: "object",
    properties: {
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: { type: "object" },
    },
  };
  return { ...own, "x-kubernetes-group-version-kind": gvk };
}

/** The document of one group/version (`api/v1`, `apis/apps/v1`), or undefined. */
export function openApiDocument(
  registry: ResourceRegistry,
  path: string,
): Record<string, unknown> | undefined {
  const m = /^(?:api\/(v1)|apis\/([^/]+)\/([^/]+))$/.exec(path);
  if (!m) return undefined;
  const [group, version] = m[1] ? ["", m[1]] : [m[2], m[3]];
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes (edgeroll sim)", version: KUBERNETES_VERSION.gitVersion },
    paths: Object.assign({}, ...types.map(pathsOf)),
    components: {
      schemas: Object.fromEntries(types.map((t) => [schemaName(t), kindSchema(t)])),
    },
  };
}
