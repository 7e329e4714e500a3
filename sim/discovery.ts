/**
 * Discovery and version documents: `/version`, `/api`, `/apis`, `/apis/<group>`, the
 * per-group-version resource lists, and the aggregated form (`apidiscovery.k8s.io/v2`)
 * that kubectl 1.32 asks for first.
 */
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";

export const KUBERNETES_VERSION = {
  major: "1",
  minor: "32",
  gitVersion: "v1.32.4",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2025-04-22T16:02:27Z",
  goVersion: "go1.23.8",
  compiler: "gc",
  platform: "linux/amd64",
};

export const AGGREGATED_CONTENT_TYPE =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

const STATUS_VERBS = ["get", "patch", "update"];

interface Subresource {
  name: string;
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

function subresourcesOf(type: ResourceType): Subresource[] {
  const subs: Subresource[] = [];
  if (type.statusSubresource) subs.push({ name: "status", kind: type.kind, verbs: STATUS_VERBS });
  if (type.storage === "pods") {
    subs.push({ name: "binding", kind: "Binding", verbs: ["create"] });
    subs.push({ name: "resize", kind: "Pod", verbs: STATUS_VERBS });
    subs.push({
      name: "eviction",
      kind: "Eviction",
      group: "policy",
      version: "v1",
      verbs: ["create"],
    });
  }
  return subs;
}

export function apiVersions(host: string): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: host }],
  };
}

function groupVersions(name: string, versions: string[]) {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }));
  return { name, versions: list, preferredVersion: list[0] };
}

export function apiGroupList(registry: ResourceRegistry): Record<string, unknown> {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: registry.groups().map((g) => groupVersions(g.name, g.versions)),
  };
}

export function apiGroup(
  registry: ResourceRegistry,
  group: string,
): Record<string, unknown> | undefined {
  const found = registry.groups().find((g) => g.name === group);
  return found
    ? { kind: "APIGroup", apiVersion: "v1", ...groupVersions(found.name, found.versions) }
    : undefined;
}

export function apiResourceList(
  registry: ResourceRegistry,
  group: string,
  version: string,
): Record<string, unknown> | undefined {
  const types = registry.inGroupVersion(group, version);
  if (types.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf({ group, version }),
    resources: types.flatMap((t) => [
      {
        name: t.plural,
        singularName: t.singular,
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: t.verbs,
        ...(t.shortNames ? { shortNames: t.shortNames } : {}),
        ...(t.categories ? { categories: t.categories } : {}),
      },
      ...subresourcesOf(t).map((s) => ({
        name: `${t.plural}/${s.name}`,
        singularName: "",
        namespaced: t.namespaced,
        ...(s.group ? { group: s.group, version: s.version } : {}),
        kind: s.kind,
        verbs: s.verbs,
      })),
    ]),
  };
}

function discoveryResource(t: ResourceType) {
  return {
    resource: t.plural,
    responseKind: { group: t.group, version: t.version, kind: t.kind },
    scope: t.namespaced ? "Namespaced" : "Cluster",
    singularResource: t.singular,
    verbs: t.verbs,
    ...(t.shortNames ? { shortNames: t.shortNames } : {}),
    ...(t.categories ? { categories: t.categories } : {}),
    ...(subresourcesOf(t).length > 0
      ? {
        subresources: subresourcesOf(t).map((s) => ({
          subresource: s.name,
          responseKind: {
            group: s.group ?? t.group,
            version: s.version ?? t.version,
            kind: s.kind,
          },
          verbs: s.verbs,
        })),
      }
      : {}),
  };
}

/** `/api` (core: true) or `/apis` in the aggregated discovery form. */
export function aggregatedDiscovery(
  registry: ResourceRegistry,
  core: boolean,
): Record<string, unknown> {
  const groups = core ? [{ name: "", versions: ["v1"] }] : registry.groups();
  return {
    kind: "APIGroupDiscoveryList",
    apiVersion: "apidiscovery.k8s.io/v2",
    metadata: {},
    items: groups.map((g) => ({
      metadata: { name: g.name },
      versions: g.versions.map((version) => ({
        version,
        resources: registry.inGroupVersion(g.name, version).map(discoveryResource),
        freshness: "Current",
      })),
    })),
  };
}
