/**
 * OpenKruise's Advanced DaemonSet as Kruise serves it (`daemonsets.apps.kruise.io`), for the
 * compatibility mode in which edgeroll replaces kruise-manager's DaemonSet controller (ADR 0027).
 *
 * Kruise 1.9 stores `v1beta1` and still serves `v1alpha1`; the two differ in three places, which
 * the conversion webhook (`POST /convert`) maps as Kruise's own conversion does:
 * - `status.daemonSetHash` (v1alpha1) ↔ `status.updateRevision` (v1beta1);
 * - the `daemonset.kruise.io/progressive-create-pod: "true"` annotation (v1alpha1) ↔
 *   `spec.scaleStrategy.partitionedScaling` (v1beta1);
 * - the deprecated `rollingUpdateType: Surging` (v1alpha1 only) is `Standard` in v1beta1.
 * Everything else, edgeroll's own status fields included, passes through unchanged.
 *
 * The controller reads and writes v1beta1 only. The planner sees a Kruise set as the
 * AdvancedDaemonSet it is (the same spec; the status under our field names) and owns its pods
 * and revisions as `apps.kruise.io/v1beta1 DaemonSet`.
 */
import { z } from "zod";
import { apiVersion as edgerollApiVersion, kind as edgerollKind } from "./advanced-daemonset.ts";

export const kruiseGroup = "apps.kruise.io";
export const kruiseKind = "DaemonSet";
export const kruisePlural = "daemonsets";
/** The version Kruise stores, and the one edgeroll reads and writes. */
export const kruiseStorageVersion = "v1beta1";
export const kruiseVersions = ["v1beta1", "v1alpha1"] as const;
export type KruiseVersion = typeof kruiseVersions[number];
export const kruiseApiVersion = `${kruiseGroup}/${kruiseStorageVersion}`;

export const progressiveCreatePodAnnotation = "daemonset.kruise.io/progressive-create-pod";

type Json = Record<string, unknown>;

interface KruiseObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { annotations?: Record<string, string> } & Json;
  spec?: Json;
  status?: Json;
}

/** The version of an `apps.kruise.io/...` apiVersion, or undefined for any other group. */
export function kruiseVersionOf(apiVersion: string | undefined): KruiseVersion | undefined {
  const [group, version] = (apiVersion ?? "").split("/");
  return group === kruiseGroup && kruiseVersions.includes(version as KruiseVersion)
    ? version as KruiseVersion
    : undefined;
}

function renamed(object: Json, from: string, to: string): Json {
  if (!(from in object)) return object;
  const { [from]: value, ...rest } = object;
  return value === undefined ? rest : { ...rest, [to]: value };
}

function toV1beta1(set: KruiseObject): KruiseObject {
  const spec = { ...set.spec };
  const strategy = spec.updateStrategy as Json | undefined;
  const rolling = strategy?.rollingUpdate as Json | undefined;
  if (rolling?.rollingUpdateType === "Surging") {
    spec.updateStrategy = {
      ...strategy,
      rollingUpdate: { ...rolling, rollingUpdateType: "Standard" },
    };
  }
  if (set.metadata?.annotations?.[progressiveCreatePodAnnotation] === "true") {
    spec.scaleStrategy = { partitionedScaling: true };
  }
  return {
    ...set,
    apiVersion: kruiseApiVersion,
    ...(set.spec ? { spec } : {}),
    ...(set.status ? { status: kruiseStatusOf(set.status) } : {}),
  };
}

function toV1alpha1(set: KruiseObject): KruiseObject {
  const { scaleStrategy, ...spec } = set.spec ?? {};
  let metadata = set.metadata;
  if ((scaleStrategy as Json | undefined)?.partitionedScaling === true) {
    metadata = {
      ...metadata,
      annotations: { ...metadata?.annotations, [progressiveCreatePodAnnotation]: "true" },
    };
  }
  return {
    ...set,
    apiVersion: `${kruiseGroup}/v1alpha1`,
    ...(metadata ? { metadata } : {}),
    ...(set.spec ? { spec } : {}),
    ...(set.status ? { status: statusFromKruise(set.status) } : {}),
  };
}

/** The set as `apps.kruise.io/<version>` serves it, from either version. */
export function convertKruiseDaemonSet<T extends { apiVersion?: string; kind?: string }>(
  set: T,
  version: KruiseVersion,
): T {
  const from = kruiseVersionOf(set.apiVersion);
  if (from === undefined || set.kind !== kruiseKind) {
    throw new Error(
      `not an ${kruiseGroup} ${kruiseKind}: apiVersion ${set.apiVersion}, kind ${set.kind}`,
    );
  }
  if (from === version) return set;
  const object = set as KruiseObject;
  return (version === "v1beta1" ? toV1beta1(object) : toV1alpha1(object)) as T;
}

/**
 * A v1beta1 Kruise DaemonSet as the planner reads an AdvancedDaemonSet: the same spec, the
 * status under edgeroll's names (`daemonSetHash`).
 */
export function kruiseAsAdvancedDaemonSet<T extends { status?: unknown }>(set: T): T {
  const status = set.status as Json | undefined;
  return {
    ...set,
    apiVersion: edgerollApiVersion,
    kind: edgerollKind,
    ...(status ? { status: statusFromKruise(status) } : {}),
  };
}

/** A status the planner wrote (edgeroll's names), as a v1beta1 Kruise DaemonSet holds it. */
export function kruiseStatusOf(status: Json): Json {
  return renamed(status, "daemonSetHash", "updateRevision");
}

/** A v1beta1 Kruise DaemonSet's status under edgeroll's names. */
export function statusFromKruise(status: Json): Json {
  return renamed(status, "updateRevision", "daemonSetHash");
}

/** `apiextensions.k8s.io/v1` ConversionReview, as the API server sends it (bounded). */
export const ConversionReview = z.object({
  apiVersion: z.literal("apiextensions.k8s.io/v1"),
  kind: z.literal("ConversionReview"),
  request: z.object({
    uid: z.string().min(1).max(128),
    desiredAPIVersion: z.string().max(253),
    objects: z.array(z.looseObject({ apiVersion: z.string(), kind: z.string() })).max(10_000),
  }),
});
export type ConversionReview = z.infer<typeof ConversionReview>;

/**
 * The API server's answer to a ConversionReview: every object converted, or a Failure naming the
 * first object that could not be (then none is: a conversion is all or nothing).
 */
export function convertReview(review: ConversionReview): Json {
  const { uid, desiredAPIVersion, objects } = review.request;
  const version = kruiseVersionOf(desiredAPIVersion);
  const answer = (result: Json, convertedObjects: unknown[] = []) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    response: { uid, result, convertedObjects },
  });
  if (version === undefined) {
    return answer({
      status: "Failure",
      message: `cannot convert to ${desiredAPIVersion}: only ${kruiseGroup}/${
        kruiseVersions.join(", ")
      } are served`,
    });
  }
  try {
    const converted = objects.map((object) => convertKruiseDaemonSet(object, version));
    return answer({ status: "Success" }, converted);
  } catch (err) {
    return answer({ status: "Failure", message: (err as Error).message });
  }
}
