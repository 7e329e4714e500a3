/**
 * The kinds the simulator serves: what kube-apiserver's REST storage registry and discovery
 * know about each resource. Built-in kinds are fixed here; a created CRD adds its own.
 */
import type { KubeObject } from "./store.ts";
import type { WebhookConversion } from "./conversion.ts";

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

/** A JSON schema as CRDs carry it (`openAPIV3Schema`), with the Kubernetes extensions. */
export interface SchemaProps {
  type?: string;
  properties?: Record<string, SchemaProps>;
  items?: SchemaProps;
  additionalProperties?: SchemaProps | boolean;
  required?: string[];
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  nullable?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-embedded-resource"?: boolean;
  /** CEL rules; sim evaluates the transition rule `self == oldSelf` only (ADR 0008). */
  "x-kubernetes-validations"?: { rule: string; message?: string }[];
  [extension: string]: unknown;
}

export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  /** Has a `/status` subresource: the main resource ignores status and vice versa. */
  statusSubresource: boolean;
  /** Store key: `<plural>` for the core group, `<plural>.<group>` otherwise. */
  storage: string;
  /** For resources that share storage with another version's shape (events.k8s.io). */
  fromStorage?: (object: KubeObject) => KubeObject;
  toStorage?: (object: KubeObject) => KubeObject;
  /**
   * Fields a field selector may name besides metadata.name and metadata.namespace, as
   * kube-apiserver allows them per resource (anything else is a 400).
   */
  fieldLabels: string[];
  /**
   * Custom resources: their printer columns and schema (strategic merge is refused), and the
   * CRD's conversion webhook when it has one (sim/conversion.ts).
   */
  custom?: {
    printerColumns: PrinterColumn[];
    schema?: SchemaProps;
    conversion?: WebhookConversion;
  };
}

export const ALL_VERBS = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

export function apiVersionOf(type: { group: string; version: string }): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

export function storageKey(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural;
}

const INVOLVED = ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"];

/** Field selectors kube-apiserver supports, by `<group>/<plural>`. */
const FIELD_LABELS: Record<string, string[]> = {
  "/pods": [
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  "/nodes": ["spec.unschedulable"],
  "/namespaces": ["status.phase"],
  "/secrets": ["type"],
  "/events": [
    ...INVOLVED.map((f) => `involvedObject.${f}`),
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
  "events.k8s.io/events": [
    ...INVOLVED.map((f) => `regarding.${f}`),
    "reason",
    "reportingController",
    "type",
  ],
  "batch/jobs": ["status.successful"],
};

function builtIn(
  group: string,
  version: string,
  kind: string,
  plural: string,
  options: Partial<ResourceType> & { namespaced: boolean },
): ResourceType {
  return {
    group,
    version,
    kind,
    plural,
    singular: kind.toLowerCase(),
    verbs: ALL_VERBS,
    statusSubresource: false,
    storage: storageKey(group, plural),
    fieldLabels: FIELD_LABELS[`${group}/${plural}`] ?? [],
    ...options,
  };
}

/** events.k8s.io/v1 field names against core v1's, which is how both are stored. */
const EVENT_FIELDS: [string, string][] = [
  ["regarding", "involvedObject"],
  ["note", "message"],
  ["reportingController", "reportingComponent"],
  ["deprecatedSource", "source"],
  ["deprecatedFirstTimestamp", "firstTimestamp"],
  ["deprecatedLastTimestamp", "lastTimestamp"],
  ["deprecatedCount", "count"],
];

function renameFields(object: KubeObject, pairs: [string, string][]): KubeObject {
  const out: KubeObject = { ...object };
  for (const [from, to] of pairs) {
    if (from in out) {
      out[to] = out[from];
      delete out[from];
    }
  }
  return out;
}

const CORE_EVENT_TO_EVENTS_V1 = EVENT_FIELDS.map(([a, b]) => [b, a] as [string, string]);

export function builtInTypes(): ResourceType[] {
  return [
    builtIn("", "v1", "Namespace", "namespaces", {
      namespaced: false,
      shortNames: ["ns"],
      statusSubresource: true,
    }),
    builtIn("", "v1", "Node", "nodes", {
      namespaced: false,
      shortNames: ["no"],
      statusSubresource: true,
    }),
    builtIn("", "v1", "Pod", "pods", {
      namespaced: true,
      shortNames: ["po"],
      categories: ["all"],
      statusSubresource: true,
    }),
    builtIn("", "v1", "Binding", "bindings", { namespaced: true, verbs: ["create"] }),
    builtIn("", "v1", "Event", "events", { namespaced: true, shortNames: ["ev"] }),
    builtIn("", "v1", "ServiceAccount", "serviceaccounts", {
      namespaced: true,
      shortNames: ["sa"],
    }),
    builtIn("", "v1", "Secret", "secrets", { namespaced: true }),
    builtIn("", "v1", "ConfigMap", "configmaps", { namespaced: true, shortNames: ["cm"] }),
    builtIn("apps", "v1", "DaemonSet", "daemonsets", {
      namespaced: true,
      shortNames: ["ds"],
      categories: ["all"],
      statusSubresource: true,
    }),
    builtIn("apps", "v1", "ControllerRevision", "controllerrevisions", { namespaced: true }),
    builtIn("batch", "v1", "Job", "jobs", {
      namespaced: true,
      categories: ["all"],
      statusSubresource: true,
    }),
    builtIn("coordination.k8s.io", "v1", "Lease", "leases", { namespaced: true }),
    // Stored and validated generically, so manifests (tests/manifests.test.ts) can be dry-run.
    builtIn("", "v1", "Service", "services", { namespaced: true, shortNames: ["svc"] }),
    builtIn("apps", "v1", "Deployment", "deployments", {
      namespaced: true,
      shortNames: ["deploy"],
      categories: ["all"],
      statusSubresource: true,
    }),
    // Watched by Kruise Rollout's manager whether or not it rolls any (issue 37).
    builtIn("apps", "v1", "StatefulSet", "statefulsets", {
      namespaced: true,
      shortNames: ["sts"],
      categories: ["all"],
      statusSubresource: true,
    }),
    builtIn("apps", "v1", "ReplicaSet", "replicasets", {
      namespaced: true,
      shortNames: ["rs"],
      categories: ["all"],
      statusSubresource: true,
    }),
    builtIn("batch", "v1", "CronJob", "cronjobs", {
      namespaced: true,
      shortNames: ["cj"],
      statusSubresource: true,
    }),
    builtIn("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", {
      namespaced: false,
    }),
    builtIn("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", {
      namespaced: false,
    }),
    builtIn("rbac.authorization.k8s.io", "v1", "Role", "roles", { namespaced: true }),
    builtIn("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", { namespaced: true }),

    builtIn("events.k8s.io", "v1", "Event", "events", {
      namespaced: true,
      shortNames: ["ev"],
      storage: "events",
      fromStorage: (o) => renameFields(o, CORE_EVENT_TO_EVENTS_V1),
      toStorage: (o) => renameFields(o, EVENT_FIELDS),
    }),
    builtIn("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", {
      namespaced: false,
      shortNames: ["crd", "crds"],
      statusSubresource: true,
    }),
    // Admission webhooks' registrations; sim calls the webhooks (sim/admission-webhooks.ts).
    builtIn(
      "admissionregistration.k8s.io",
      "v1",
      "MutatingWebhookConfiguration",
      "mutatingwebhookconfigurations",
      { namespaced: false },
    ),
    builtIn(
      "admissionregistration.k8s.io",
      "v1",
      "ValidatingWebhookConfiguration",
      "validatingwebhookconfigurations",
      { namespaced: false },
    ),
    builtIn("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", {
      namespaced: false,
      verbs: ["create"],
    }),
  ];
}

/** Looks resource types up by URL (group, version, plural) and by store key. */
export class ResourceRegistry {
  readonly #types: ResourceType[] = [];

  constructor(types: ResourceType[] = builtInTypes()) {
    for (const type of types) this.add(type);
  }

  add(type: ResourceType): void {
    this.remove(type.group, type.version, type.plural);
    this.#types.push(type);
  }

  remove(group: string, version: string, plural: string): void {
    const index = this.#types.findIndex((t) =>
      t.group === group && t.version === version && t.plural === plural
    );
    if (index >= 0) this.#types.splice(index, 1);
  }

  /** Drops every version of a custom resource (its CRD was deleted or rewritten). */
  removeCustom(storage: string): void {
    for (let i = this.#types.length - 1; i >= 0; i--) {
      if (this.#types[i].custom && this.#types[i].storage === storage) this.#types.splice(i, 1);
    }
  }

  find(group: string, version: string, plural: string): ResourceType | undefined {
    return this.#types.find((t) =>
      t.group === group && t.version === version && t.plural === plural
    );
  }

  /** The type objects of this store key are written as (its first registered version). */
  byStorage(storage: string): ResourceType | undefined {
    return this.#types.find((t) => t.storage === storage && !t.fromStorage);
  }

  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.#types.find((t) => apiVersionOf(t) === apiVersion && t.kind === kind);
  }

  all(): readonly ResourceType[] {
    return this.#types;
  }

  /** Groups in discovery order (built-ins first, as registered), each with its versions. */
  groups(): { name: string; versions: string[] }[] {
    const groups = new Map<string, string[]>();
    for (const t of this.#types) {
      if (!t.group) continue;
      const versions = groups.get(t.group) ?? [];
      if (!versions.includes(t.version)) versions.push(t.version);
      groups.set(t.group, versions);
    }
    return [...groups].map(([name, versions]) => ({ name, versions }));
  }

  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.#types.filter((t) => t.group === group && t.version === version);
  }
}
