/**
 * The AdvancedDaemonSet CustomResourceDefinition, built from the zod schema.
 *
 * `z.toJSONSchema` gives JSON Schema; a CRD needs a *structural* OpenAPI v3 schema, so the
 * result is rewritten: int-or-string unions become `x-kubernetes-int-or-string`, the pod template
 * keeps unknown fields, `metadata` is left to the API server, `const` becomes a one-value enum,
 * and the JSON-Schema-only keys (`$schema`, `propertyNames`, `additionalProperties: false`, the
 * safe-integer bounds zod adds to every int) go.
 */
import { z } from "zod";
import {
  AdvancedDaemonSet,
  apiVersion,
  group,
  kind,
  plural,
  version,
} from "./advanced-daemonset.ts";
import {
  kruiseGroup,
  kruiseKind,
  kruisePlural,
  kruiseStorageVersion,
  type KruiseVersion,
  kruiseVersions,
} from "./kruise.ts";
import { rolloutStatusKind, rolloutStatusPlural } from "./rollout-status.ts";

type Schema = { [key: string]: unknown };

function isIntOrString(schema: Schema): boolean {
  const options = schema.anyOf;
  if (!Array.isArray(options) || options.length !== 2) return false;
  const types = options.map((o: Schema) => o.type).sort();
  return types[0] === "integer" && types[1] === "string";
}

function structural(schema: Schema): Schema {
  if (isIntOrString(schema)) {
    const { anyOf: _anyOf, ...rest } = schema;
    return { ...rest, "x-kubernetes-int-or-string": true };
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema" || key === "propertyNames") continue;
    if (key === "const") {
      out.enum = [value];
      continue;
    }
    if (
      (key === "minimum" && value === Number.MIN_SAFE_INTEGER) ||
      (key === "maximum" && value === Number.MAX_SAFE_INTEGER)
    ) continue;
    if (key === "additionalProperties") {
      // `false` is the JSON Schema spelling of "no unknown fields", which a CRD prunes anyway;
      // `{}` (a loose object) means unknown fields are kept.
      if (value === false) continue;
      if (typeof value === "object" && value && Object.keys(value).length === 0) {
        out["x-kubernetes-preserve-unknown-fields"] = true;
        continue;
      }
    }
    if (key === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, structural(v)]),
      );
    } else if ((key === "items" || key === "additionalProperties") && typeof value === "object") {
      out[key] = structural(value as Schema);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** The openAPIV3Schema of the AdvancedDaemonSet CRD. */
export function advancedDaemonSetOpenApiSchema(): Schema {
  const jsonSchema = z.toJSONSchema(AdvancedDaemonSet, { io: "input" }) as Schema;
  const schema = structural(jsonSchema);
  const properties = schema.properties as Record<string, Schema>;
  const spec = properties.spec.properties as Record<string, Schema>;
  properties.metadata = { type: "object" };
  properties.apiVersion = { type: "string" };
  properties.kind = { type: "string" };
  spec.template = {
    type: "object",
    description: "The pod template (core/v1 PodTemplateSpec), kept as written.",
    "x-kubernetes-preserve-unknown-fields": true,
  };
  // As apps/v1 DaemonSets: the API server refuses a changed selector, which would otherwise
  // leave every old pod out of the set's sight and start a second pod on every node.
  spec.selector["x-kubernetes-validations"] = [{
    rule: "self == oldSelf",
    message: "field is immutable",
  }];
  schema.required = ["spec"];
  return schema;
}

function printerColumn(name: string, jsonPath: string, description: string) {
  return { name, type: "integer", jsonPath, description };
}

function wideColumn(name: string, jsonPath: string, description: string) {
  return { name, type: "string", priority: 1, jsonPath, description };
}

const printerColumns = [
  printerColumn("DESIRED", ".status.desiredNumberScheduled", "The desired number of pods."),
  printerColumn("CURRENT", ".status.currentNumberScheduled", "The current number of pods."),
  printerColumn("READY", ".status.numberReady", "The ready number of pods."),
  printerColumn("UP-TO-DATE", ".status.updatedNumberScheduled", "The updated number of pods."),
  printerColumn("AVAILABLE", ".status.numberAvailable", "The available number of pods."),
  {
    name: "AGE",
    type: "date",
    jsonPath: ".metadata.creationTimestamp",
    description: "CreationTimestamp of the set.",
  },
  // `kubectl get -o wide`, as Kruise's CRD and upstream's DaemonSet table have them.
  wideColumn("CONTAINERS", ".spec.template.spec.containers[*].name", "The containers."),
  wideColumn("IMAGES", ".spec.template.spec.containers[*].image", "The images."),
];

/** The whole CustomResourceDefinition object, ready to be written as YAML. */
export function advancedDaemonSetCrd(): Schema {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        shortNames: ["ads"],
      },
      scope: "Namespaced",
      versions: [{
        name: version,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          ...printerColumns,
          wideColumn("SELECTOR", ".spec.selector", "The label selector of the set's pods."),
        ],
        schema: { openAPIV3Schema: advancedDaemonSetOpenApiSchema() },
      }],
    },
  };
}

/**
 * The RolloutStatus CRD (ADR 0039): a plain DaemonSet's rollout status, in the AdvancedDaemonSet
 * status's schema, with the same columns. No status subresource: the object is all status, and
 * a PUT under its resourceVersion is the claim.
 */
export function rolloutStatusCrd(): Schema {
  const statusSchema = (advancedDaemonSetOpenApiSchema().properties as Record<string, Schema>)
    .status;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${rolloutStatusPlural}.${group}` },
    spec: {
      group,
      names: {
        kind: rolloutStatusKind,
        listKind: `${rolloutStatusKind}List`,
        plural: rolloutStatusPlural,
        singular: rolloutStatusKind.toLowerCase(),
      },
      scope: "Namespaced",
      versions: [{
        name: version,
        served: true,
        storage: true,
        additionalPrinterColumns: printerColumns.filter((c) => !("priority" in c)),
        schema: {
          openAPIV3Schema: {
            type: "object",
            description: "edgeroll's rollout status of the apps/v1 DaemonSet of the same " +
              "namespace and name (OpenYurt mode), which owns it.",
            properties: {
              apiVersion: { type: "string" },
              kind: { type: "string" },
              metadata: { type: "object" },
              status: statusSchema,
            },
          },
        },
      }],
    },
  };
}

/** The CRDs every installation of edgeroll has: the AdvancedDaemonSet's and the RolloutStatus's. */
export function edgerollCrds(): Schema[] {
  return [advancedDaemonSetCrd(), rolloutStatusCrd()];
}

/** For messages: the resource this CRD serves. */
export const crdResource = `${plural}.${group} (${apiVersion}, kind ${kind})`;

/** Where the API server sends ConversionReviews: the controller's Service, or a URL. */
export type ConversionClient =
  | { service: { namespace: string; name: string; port: number } }
  | { url: string };

/**
 * The schema of one version of Kruise's DaemonSet: the AdvancedDaemonSet's, with Kruise's
 * names (ADR 0027). v1beta1 writes the revision as `status.updateRevision` and has no
 * `Surging` type; v1alpha1 has no `spec.scaleStrategy`.
 */
function kruiseOpenApiSchema(version: KruiseVersion): Schema {
  const schema = advancedDaemonSetOpenApiSchema();
  const properties = schema.properties as Record<string, Schema>;
  const spec = properties.spec.properties as Record<string, Schema>;
  const status = properties.status.properties as Record<string, Schema>;
  if (version === "v1alpha1") {
    delete spec.scaleStrategy;
    return schema;
  }
  const { daemonSetHash, ...rest } = status;
  properties.status.properties = {
    ...rest,
    updateRevision: { ...daemonSetHash, description: "The current revision's hash." },
  };
  const strategy = spec.updateStrategy.properties as Record<string, Schema>;
  const rolling = strategy.rollingUpdate.properties as Record<string, Schema>;
  const type = rolling.rollingUpdateType;
  type.enum = (type.enum as string[]).filter((t) => t !== "Surging");
  return schema;
}

/**
 * `daemonsets.apps.kruise.io` as Kruise 1.9 defines it (both versions, v1beta1 stored, the same
 * names, short names and columns), served by edgeroll in compatibility mode: its schema is the
 * AdvancedDaemonSet's, so edgeroll's status fields are kept, and conversion goes through the
 * controller's `POST /convert`.
 */
export function kruiseDaemonSetCrd(client: ConversionClient, caBundle?: string): Schema {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${kruisePlural}.${kruiseGroup}` },
    spec: {
      group: kruiseGroup,
      names: {
        kind: kruiseKind,
        listKind: `${kruiseKind}List`,
        plural: kruisePlural,
        singular: kruiseKind.toLowerCase(),
        shortNames: ["daemon", "ads"],
      },
      scope: "Namespaced",
      conversion: {
        strategy: "Webhook",
        webhook: {
          conversionReviewVersions: ["v1"],
          clientConfig: {
            ...("url" in client ? { url: `${client.url.replace(/\/$/, "")}/convert` } : {
              service: { ...client.service, path: "/convert" },
            }),
            ...(caBundle ? { caBundle } : {}),
          },
        },
      },
      versions: kruiseVersions.map((version) => ({
        name: version,
        served: true,
        storage: version === kruiseStorageVersion,
        subresources: { status: {} },
        additionalPrinterColumns: structuredClone(printerColumns),
        schema: { openAPIV3Schema: kruiseOpenApiSchema(version) },
      })),
    },
  };
}
