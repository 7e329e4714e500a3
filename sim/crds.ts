/**
 * CustomResourceDefinitions: a stored CRD makes its group/version/kind served (every served
 * version, with the CRD's schema, printer columns, status subresource and conversion webhook);
 * a deleted CRD stops serving and takes its objects with it.
 */
import type { KubeObject, Store } from "./store.ts";
import type { WebhookConversion } from "./conversion.ts";
import {
  ALL_VERBS,
  type PrinterColumn,
  type ResourceRegistry,
  type ResourceType,
  type SchemaProps,
  storageKey,
} from "./resources.ts";

const CRDS = "customresourcedefinitions.apiextensions.k8s.io";

interface CrdVersion {
  name: string;
  served?: boolean;
  storage?: boolean;
  schema?: { openAPIV3Schema?: SchemaProps };
  subresources?: { status?: Record<string, never> };
  additionalPrinterColumns?: PrinterColumn[];
  selectableFields?: { jsonPath: string }[];
}

interface CrdSpec {
  group: string;
  scope: "Namespaced" | "Cluster";
  names: {
    plural: string;
    singular?: string;
    kind: string;
    shortNames?: string[];
    categories?: string[];
  };
  versions: CrdVersion[];
  conversion?: {
    strategy?: string;
    webhook?: {
      conversionReviewVersions?: string[];
      clientConfig?: {
        url?: string;
        caBundle?: string;
        service?: { namespace?: string; name?: string; port?: number; path?: string };
      };
    };
  };
}

/** The PEM a `caBundle` holds; undefined when it is not base64. */
export function caBundlePem(caBundle: string): string | undefined {
  try {
    return atob(caBundle);
  } catch {
    return undefined;
  }
}

/**
 * The CRD's conversion webhook (strategy `Webhook`). One sim cannot call is kept with the
 * reason, so the CRD is served and only its conversions fail (its storage version reads and
 * writes as usual), as kube-apiserver's do when the webhook is down.
 */
function webhookConversion(spec: CrdSpec): WebhookConversion | undefined {
  if (spec.conversion?.strategy !== "Webhook") return undefined;
  const webhook = spec.conversion.webhook ?? {};
  const config = webhook.clientConfig ?? {};
  const service = config.service;
  const caPem = config.caBundle ? caBundlePem(config.caBundle) : undefined;
  const unreachable = service
    ? `sim resolves no Services, so it cannot call clientConfig.service ${service.namespace}/${service.name}; give the CRD a clientConfig.url`
    : !config.url
    ? "the CRD has no clientConfig.url"
    : config.caBundle && caPem === undefined
    ? "clientConfig.caBundle is not base64"
    : undefined;
  return {
    storageVersion: `${spec.group}/${spec.versions.find((v) => v.storage)?.name}`,
    kind: spec.names.kind,
    url: config.url,
    unreachable,
    caPem,
    reviewVersions: webhook.conversionReviewVersions ?? [],
  };
}

/** The resource types a CRD serves, storage version first. */
export function typesOfCrd(crd: KubeObject): ResourceType[] {
  const spec = crd.spec as CrdSpec;
  const versions = [...spec.versions].sort((a, b) => Number(b.storage) - Number(a.storage));
  const conversion = webhookConversion(spec);
  return versions.filter((v) => v.served !== false).map((v) => ({
    group: spec.group,
    version: v.name,
    kind: spec.names.kind,
    plural: spec.names.plural,
    singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
    namespaced: spec.scope === "Namespaced",
    verbs: ALL_VERBS,
    shortNames: spec.names.shortNames,
    categories: spec.names.categories,
    statusSubresource: Boolean(v.subresources?.status),
    storage: storageKey(spec.group, spec.names.plural),
    fieldLabels: (v.selectableFields ?? []).map((f) => f.jsonPath.replace(/^\./, "")),
    custom: {
      printerColumns: v.additionalPrinterColumns ?? [],
      schema: v.schema?.openAPIV3Schema,
      ...(conversion ? { conversion } : {}),
    },
  }));
}

/** Keeps `registry` in step with the CRDs in `store`; returns the unsubscribe function. */
export function serveCrds(store: Store, registry: ResourceRegistry): () => void {
  const install = (crd: KubeObject) => {
    const types = typesOfCrd(crd);
    if (types.length > 0) registry.removeCustom(types[0].storage);
    for (const type of types) registry.add(type);
  };
  for (const crd of store.scan(CRDS)) install(crd);
  return store.subscribe((event) => {
    if (event.resource !== CRDS) return;
    const spec = event.object.spec as CrdSpec;
    const storage = storageKey(spec.group, spec.names.plural);
    if (event.type !== "DELETED") {
      install(event.object);
      return;
    }
    registry.removeCustom(storage);
    for (const object of store.scan(storage)) {
      store.delete(storage, object.metadata.namespace, object.metadata.name);
    }
  });
}
