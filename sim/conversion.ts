/**
 * CRD conversion webhooks, called as kube-apiserver calls them (ADR 0028). The objects of a CRD
 * with `spec.conversion.strategy: Webhook` are stored in its storage version; a write in another
 * served version is converted to it, a read in another version is converted from it, each by one
 * `ConversionReview` POSTed to the CRD's `clientConfig.url`. A stored object never changes, so
 * its view in a version is kept beside it (weakly) once converted: every watcher of a version
 * shares one call per event, and a list converts only what changed since the last.
 */
import type { KubeObject } from "./store.ts";
import { ApiError } from "./status.ts";
import type { WebhookClient } from "./webhook-client.ts";
import { isMap } from "./patch.ts";

/** A CRD's webhook conversion, read from its `spec.conversion` (sim/crds.ts). */
export interface WebhookConversion {
  /** `group/version` the CRD stores its objects in; their kind. */
  storageVersion: string;
  kind: string;
  url?: string;
  /** Why the webhook cannot be called at all (a `service` client config); every call fails so. */
  unreachable?: string;
  /** The PEM the webhook's serving certificate must chain to (`caBundle`, decoded). */
  caPem?: string;
  /** `conversionReviewVersions`, the first of `v1` and `v1beta1` named is sent. */
  reviewVersions: string[];
}

type Json = Record<string, unknown>;

function deepFreeze<T>(value: T): T {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value;
  for (const child of Object.values(value)) deepFreeze(child);
  return Object.freeze(value);
}

/** `gvk.String()` in Go: `group/version, Kind=Kind`. */
function groupVersionKind(apiVersion: string, kind: string): string {
  return `${apiVersion}, Kind=${kind}`;
}

/**
 * `converted` with `original`'s metadata except labels and annotations, which the webhook may
 * change (kube-apiserver's `restoreObjectMeta`).
 */
export function withMetadata(converted: KubeObject, original: KubeObject): KubeObject {
  const metadata = { ...original.metadata };
  for (const field of ["labels", "annotations"] as const) {
    const value = converted.metadata?.[field];
    if (value === undefined || value === null) delete metadata[field];
    else metadata[field] = value;
  }
  return { ...converted, metadata };
}

/**
 * `value` with the keys of its maps in `like`'s order where `like` has them: an object converted
 * there and back compares equal to the stored one as text (the store's no-op and generation
 * checks), whatever order the webhook writes keys in.
 */
export function alignKeys(value: unknown, like: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map((item, i) => alignKeys(item, Array.isArray(like) ? like[i] : undefined));
  }
  if (!isMap<unknown>(value) || !isMap<unknown>(like)) return value;
  const out: Json = {};
  for (const key of Object.keys(like)) {
    if (Object.hasOwn(value, key)) out[key] = alignKeys(value[key], like[key]);
  }
  for (const key of Object.keys(value)) if (!Object.hasOwn(out, key)) out[key] = value[key];
  return out;
}

/** What a converted object must keep, as kube-apiserver checks it; the problem, if any. */
function problemWith(
  original: KubeObject,
  converted: unknown,
  desired: string,
): string | undefined {
  if (!isMap<unknown>(converted)) return "not an object";
  if (converted.apiVersion !== desired) {
    return `invalid groupVersion (expected ${desired}, received ${converted.apiVersion})`;
  }
  if (converted.kind !== original.kind) {
    return `invalid kind (expected ${original.kind}, received ${converted.kind})`;
  }
  const meta = converted.metadata;
  if (!isMap<unknown>(meta)) return "missing metadata in converted object";
  for (const field of ["name", "namespace", "uid"] as const) {
    const [expected, got] = [original.metadata[field] ?? "", meta[field] ?? ""];
    if (expected !== got) return `must have the same ${field}: ${expected} != ${got}`;
  }
  for (const field of ["labels", "annotations"]) {
    const map = meta[field];
    if (map === undefined || map === null) continue;
    if (!isMap<unknown>(map)) return `invalid metadata.${field} in converted object`;
    const key = Object.keys(map).find((k) => typeof map[k] !== "string");
    if (key !== undefined) return `metadata.${field}[${key}] must be a string`;
  }
  return undefined;
}

/** A server's conversions: the views it has converted, and the client that calls webhooks. */
export class Conversions {
  constructor(readonly client: WebhookClient) {}

  /** Per CRD conversion (a CRD's change makes a new one), per stored object, per version. */
  readonly #views = new WeakMap<
    WebhookConversion,
    WeakMap<KubeObject, Map<string, Promise<KubeObject>>>
  >();

  /**
   * `objects` (stored or sent, of `conversion`'s CRD) in `apiVersion`: those in it already as
   * they are, the others from one review. Views of stored (frozen) objects are kept, frozen too.
   * Fails with the 500 kube-apiserver answers when the webhook cannot be called or says no.
   */
  convert(
    conversion: WebhookConversion,
    objects: readonly KubeObject[],
    apiVersion: string,
  ): Promise<KubeObject[]> {
    let cache = this.#views.get(conversion);
    if (!cache) this.#views.set(conversion, cache = new WeakMap());
    const out: (KubeObject | Promise<KubeObject>)[] = [];
    const missing: number[] = [];
    objects.forEach((object, i) => {
      const from = object.apiVersion ?? conversion.storageVersion;
      if (from === apiVersion) {
        out[i] = object.apiVersion && object.kind
          ? object
          : { ...object, apiVersion, kind: conversion.kind };
      } else {
        const cached = cache.get(object)?.get(apiVersion);
        if (cached) out[i] = cached;
        else missing.push(i);
      }
    });
    if (missing.length > 0) {
      const review = this.#review(conversion, missing.map((i) => objects[i]), apiVersion);
      missing.forEach((i, j) => {
        const object = objects[i];
        const view = review.then((views) => views[j]);
        out[i] = view;
        if (!Object.isFrozen(object)) return;
        let views = cache.get(object);
        if (!views) cache.set(object, views = new Map());
        views.set(apiVersion, view);
        // A failure is not kept: the next read calls the webhook again.
        view.catch(() => views.delete(apiVersion));
      });
    }
    return Promise.all(out);
  }

  async #review(
    conversion: WebhookConversion,
    objects: KubeObject[],
    apiVersion: string,
  ): Promise<KubeObject[]> {
    const sent = objects.map((o) =>
      o.apiVersion && o.kind
        ? o
        : { ...o, apiVersion: o.apiVersion ?? conversion.storageVersion, kind: conversion.kind }
    );
    const about = groupVersionKind(String(sent[0].apiVersion), conversion.kind);
    const fail = (what: string) =>
      new ApiError(500, "InternalError", `conversion webhook for ${about} ${what}`);
    if (conversion.unreachable) throw fail(`failed: ${conversion.unreachable}`);
    const reviewVersion = conversion.reviewVersions.find((v) => v === "v1" || v === "v1beta1");
    if (!reviewVersion) throw fail("failed: no supported conversion review versions");
    const uid = crypto.randomUUID();
    const body = JSON.stringify({
      apiVersion: `apiextensions.k8s.io/${reviewVersion}`,
      kind: "ConversionReview",
      request: { uid, desiredAPIVersion: apiVersion, objects: sent },
    });
    let review: unknown;
    try {
      review = JSON.parse(await this.client.post(conversion.url!, conversion.caPem, body));
    } catch (err) {
      throw fail(`failed: ${(err as Error).message}`);
    }
    const answer = isMap<unknown>(review) && isMap<unknown>(review.response)
      ? review.response
      : undefined;
    if (
      reviewVersion === "v1" && isMap<unknown>(review) &&
      (review.apiVersion !== "apiextensions.k8s.io/v1" || review.kind !== "ConversionReview")
    ) {
      throw fail(
        `failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got ${review.apiVersion}, Kind=${review.kind}`,
      );
    }
    if (!answer) throw fail("failed: no response provided");
    if (reviewVersion === "v1" && answer.uid !== uid) {
      throw fail(`failed: expected response.uid="${uid}", got "${answer.uid ?? ""}"`);
    }
    const result = isMap<unknown>(answer.result) ? answer.result : {};
    if (result.status !== "Success") {
      throw fail(
        `failed: ${
          result.message || `response.result.status was '${result.status}', not 'Success'`
        }`,
      );
    }
    const converted = Array.isArray(answer.convertedObjects) ? answer.convertedObjects : [];
    if (converted.length !== sent.length) {
      throw fail(`returned ${converted.length} objects, expected ${sent.length}`);
    }
    return converted.map((object, i) => {
      const problem = problemWith(sent[i], object, apiVersion);
      if (problem) throw fail(`returned invalid converted object at index ${i}: ${problem}`);
      const view = withMetadata(object as KubeObject, sent[i]);
      return Object.isFrozen(objects[i]) ? deepFreeze(view) : view;
    });
  }
}
