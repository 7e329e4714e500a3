/**
 * What kube-apiserver's registry strategies do to an object before it is stored: defaults,
 * the validation edgeroll's writes and kubectl's depend on, status reset on create, and the
 * main-resource/status-subresource split on update. Custom resources are checked against
 * their CRD's schema.
 */
import type { KubeObject } from "./store.ts";
import { ApiError, type StatusCause } from "./status.ts";
import type { ResourceType, SchemaProps } from "./resources.ts";
import { labelSelectorMatcher } from "./selectors.ts";
import { immutableRule, unsupportedRules, validateAndPrune } from "./validation.ts";
import { caBundlePem } from "./crds.ts";
import { mutatingConfigurations, validatingConfigurations } from "./admission-webhooks.ts";
import { podResizeCauses, podUpdateCauses, resizedPod } from "./pod-updates.ts";
import { qosClass } from "../api/pod-resources.ts";

// deno-lint-ignore no-explicit-any
type Any = Record<string, any>;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Fields of a pod spec the API server fills in (the ones clients compare against). */
function defaultPodSpec(spec: Any | undefined, restartPolicy: string | undefined = "Always"): void {
  if (!spec) return;
  if (restartPolicy) spec.restartPolicy ??= restartPolicy;
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= "ClusterFirst";
  spec.schedulerName ??= "default-scheduler";
  spec.securityContext ??= {};
  for (const container of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    const tag = String(container.image ?? "").split("/").pop() ?? "";
    container.imagePullPolicy ??= tag.includes(":") && !tag.endsWith(":latest")
      ? "IfNotPresent"
      : tag.includes("@")
      ? "IfNotPresent"
      : "Always";
    container.terminationMessagePath ??= "/dev/termination-log";
    container.terminationMessagePolicy ??= "File";
    container.resources ??= {};
  }
}

function validatePodSpec(spec: Any | undefined, path: string, causes: StatusCause[]): void {
  const containers = spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    causes.push({
      reason: "FieldValueRequired",
      message: `${path}.containers: Required value`,
      field: `${path}.containers`,
    });
    return;
  }
  containers.forEach((c: Any, i: number) => {
    for (const field of ["name", "image"]) {
      if (!c?.[field]) {
        const where = `${path}.containers[${i}].${field}`;
        causes.push({
          reason: "FieldValueRequired",
          message: `${where}: Required value`,
          field: where,
        });
      }
    }
  });
}

function invalid(type: ResourceType, name: string, causes: StatusCause[]): ApiError {
  const kind = type.group ? `${type.kind}.${type.group}` : type.kind;
  return new ApiError(
    422,
    "Invalid",
    `${kind} "${name}" is invalid: ${causes.map((c) => c.message).join(", ")}`,
    // A cause's message is the error's body, without its field (kubectl prints both).
    causes.map((c) => ({
      ...c,
      message: c.field && c.message.startsWith(`${c.field}: `)
        ? c.message.slice(c.field.length + 2)
        : c.message,
    })),
    undefined,
    { name, kind: type.kind, ...(type.group ? { group: type.group } : {}) },
  );
}

/** Status a freshly created object starts with, by store key. */
function initialStatus(type: ResourceType, object: Any, now: number): unknown {
  switch (type.storage) {
    case "pods":
      return { phase: "Pending", qosClass: qosClass(object.spec?.containers ?? []) };
    case "namespaces":
      return { phase: "Active" };
    case "daemonsets.apps":
      return {
        currentNumberScheduled: 0,
        numberMisscheduled: 0,
        desiredNumberScheduled: 0,
        numberReady: 0,
      };
    case "nodes":
      return object.status; // nodes register with their status
    case "customresourcedefinitions.apiextensions.k8s.io": {
      // The simulator accepts names and establishes a CRD in the same write.
      const at = new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
      const condition = (type: string, reason: string) => ({
        type,
        status: "True",
        lastTransitionTime: at,
        reason,
        message: "",
      });
      return {
        conditions: [
          condition("NamesAccepted", "NoConflicts"),
          condition("Established", "InitialNamesAccepted"),
        ],
        acceptedNames: object.spec?.names ?? {},
        storedVersions: (object.spec?.versions ?? []).filter((v: Any) => v.storage).map((
          v: Any,
        ) => v.name),
      };
    }
    default:
      return type.custom ? undefined : {};
  }
}

function withRootMeta(schema: SchemaProps): SchemaProps {
  const preserve: SchemaProps = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return {
    ...schema,
    properties: {
      ...schema.properties,
      apiVersion: { type: "string" },
      kind: { type: "string" },
      metadata: preserve,
    },
  };
}

/**
 * Defaults and validates `object` (mutated in place) for a write of `type`. `old` is the
 * stored object for updates. Throws a 422 Status listing every cause; returns the unknown
 * fields it pruned (custom resources), for `fieldValidation` to judge.
 */
export function admit(
  type: ResourceType,
  object: KubeObject,
  old: KubeObject | undefined,
  now: number,
  subresource?: string,
): string[] {
  const o = object as Any;
  const causes: StatusCause[] = [];
  const name = object.metadata.name;
  // With generateName and no name, the store appends a valid suffix to a checked prefix.
  const generated = !name && object.metadata.generateName;
  const checked = generated ? `${object.metadata.generateName}x` : name ?? "";
  // As apimachinery's IsDNS1123Subdomain: one cause per rule broken, length first.
  const nameProblems = old ? [] : [
    ...(checked.length > 253 ? ["must be no more than 253 characters"] : []),
    ...(DNS_SUBDOMAIN.test(checked) ? [] : [
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
    ]),
  ];
  for (const problem of nameProblems) {
    causes.push({
      reason: "FieldValueInvalid",
      message: `metadata.name: Invalid value: "${name}": ${problem}`,
      field: "metadata.name",
    });
  }
  if (!old && type.statusSubresource) {
    const status = initialStatus(type, o, now);
    if (status === undefined) delete o.status;
    else o.status = status;
  }
  switch (type.storage) {
    case "pods":
      defaultPodSpec(o.spec);
      validatePodSpec(o.spec, "spec", causes);
      if (old && subresource === "resize") causes.push(...podResizeCauses(old as Any, o));
      else if (old && subresource === undefined) causes.push(...podUpdateCauses(old as Any, o));
      break;
    case "namespaces":
      o.spec ??= { finalizers: ["kubernetes"] };
      // As kube-apiserver's namespace strategy: a label naming the namespace, on every write.
      o.metadata.labels = { ...o.metadata.labels, "kubernetes.io/metadata.name": o.metadata.name };
      break;
    case "daemonsets.apps":
      admitDaemonSet(o, old as Any | undefined, causes);
      break;
    case "jobs.batch":
      if (!old) admitNewJob(o, causes);
      break;
    case "customresourcedefinitions.apiextensions.k8s.io":
      validateCrd(o, causes);
      break;
    case mutatingConfigurations:
    case validatingConfigurations:
      admitWebhookConfiguration(o, type.storage === mutatingConfigurations, causes);
      break;
  }
  const unknown: string[] = [];
  if (type.custom?.schema) {
    causes.push(...validateAndPrune(o, withRootMeta(type.custom.schema), "", unknown, old));
  }
  if (causes.length > 0) throw invalid(type, name, causes);
  return unknown;
}

function admitDaemonSet(ds: Any, old: Any | undefined, causes: StatusCause[]): void {
  const spec = ds.spec ??= {};
  spec.updateStrategy ??= { type: "RollingUpdate" };
  if (spec.updateStrategy.type === "RollingUpdate") {
    spec.updateStrategy.rollingUpdate ??= {};
    spec.updateStrategy.rollingUpdate.maxUnavailable ??= 1;
    spec.updateStrategy.rollingUpdate.maxSurge ??= 0;
  }
  spec.revisionHistoryLimit ??= 10;
  defaultPodSpec(spec.template?.spec);
  if (!spec.selector) {
    causes.push({
      reason: "FieldValueRequired",
      message: "spec.selector: Required value",
      field: "spec.selector",
    });
  } else if (!labelSelectorMatcher(spec.selector)(spec.template?.metadata?.labels)) {
    causes.push({
      reason: "FieldValueInvalid",
      message:
        "spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`",
      field: "spec.template.metadata.labels",
    });
  }
  if (old && JSON.stringify(old.spec?.selector) !== JSON.stringify(spec.selector)) {
    causes.push({
      reason: "FieldValueInvalid",
      message: "spec.selector: Invalid value: field is immutable",
      field: "spec.selector",
    });
  }
  validatePodSpec(spec.template?.spec, "spec.template.spec", causes);
}

/**
 * A new Job as the batch strategy prepares it: counts and policies defaulted, and, without
 * `manualSelector`, a selector on its own uid (set by the writer before admission, as
 * kube-apiserver fills it before the strategy runs) with the labels on its pod template.
 */
function admitNewJob(job: Any, causes: StatusCause[]): void {
  const spec = job.spec ??= {};
  if (spec.completions === undefined && spec.parallelism === undefined) spec.completions = 1;
  spec.parallelism ??= 1;
  spec.backoffLimit ??= 6;
  spec.completionMode ??= "NonIndexed";
  spec.suspend ??= false;
  spec.podReplacementPolicy ??= "TerminatingOrFailed";
  const template = spec.template ??= {};
  if (!spec.manualSelector) {
    const uid = job.metadata.uid;
    const labels = { "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid };
    const name = job.metadata.name;
    spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
    template.metadata ??= {};
    template.metadata.labels = {
      ...template.metadata.labels,
      ...labels,
      ...(name ? { "batch.kubernetes.io/job-name": name, "job-name": name } : {}),
    };
  }
  // A Job's pods have no default restart policy: the one it is given is checked.
  defaultPodSpec(template.spec, undefined);
  const restartPolicy = template.spec?.restartPolicy;
  if (restartPolicy !== "Never" && restartPolicy !== "OnFailure") {
    causes.push({
      reason: "FieldValueNotSupported",
      message:
        `spec.template.spec.restartPolicy: Unsupported value: "${restartPolicy}": supported values: "OnFailure", "Never"`,
      field: "spec.template.spec.restartPolicy",
    });
  }
  validatePodSpec(template.spec, "spec.template.spec", causes);
}

function validateCrd(crd: Any, causes: StatusCause[]): void {
  const spec = crd.spec ?? {};
  const require = (ok: boolean, field: string) => {
    if (!ok) {
      causes.push({ reason: "FieldValueRequired", message: `${field}: Required value`, field });
    }
  };
  require(typeof spec.group === "string" && spec.group.length > 0, "spec.group");
  require(typeof spec.names?.plural === "string", "spec.names.plural");
  require(typeof spec.names?.kind === "string", "spec.names.kind");
  require(spec.scope === "Namespaced" || spec.scope === "Cluster", "spec.scope");
  require(Array.isArray(spec.versions) && spec.versions.length > 0, "spec.versions");
  if (
    spec.names?.plural && spec.group && crd.metadata.name !== `${spec.names.plural}.${spec.group}`
  ) {
    causes.push({
      reason: "FieldValueInvalid",
      message:
        `metadata.name: Invalid value: "${crd.metadata.name}": must be spec.names.plural+"."+spec.group`,
      field: "metadata.name",
    });
  }
  // A rule sim cannot evaluate is refused, never ignored: a CRD would otherwise validate less
  // here than on a cluster.
  (spec.versions ?? []).forEach((v: Any, i: number) => {
    for (
      const rule of unsupportedRules(
        v.schema?.openAPIV3Schema,
        `spec.versions[${i}].schema.openAPIV3Schema`,
      )
    ) {
      causes.push({
        reason: "FieldValueNotSupported",
        message: `${rule}: sim evaluates only the CEL rule "${immutableRule}" (ADR 0008)`,
        field: rule.slice(0, rule.indexOf(":")),
      });
    }
  });
  validateConversion(spec.conversion, causes);
  const storage = (spec.versions ?? []).filter((v: Any) => v.storage).length;
  if (Array.isArray(spec.versions) && storage !== 1) {
    causes.push({
      reason: "FieldValueInvalid",
      message:
        `spec.versions: Invalid value: must have exactly one version marked as storage version`,
      field: "spec.versions",
    });
  }
}

/**
 * `spec.conversion` as kube-apiserver checks it, but for the scheme: sim calls `http://` urls
 * too, on loopback (ADR 0028).
 */
function validateConversion(conversion: Any | undefined, causes: StatusCause[]): void {
  const cause = (reason: string, field: string, message: string) =>
    causes.push({ reason, field, message: `${field}: ${message}` });
  const strategy = conversion?.strategy ?? "None";
  const webhook = conversion?.webhook;
  if (strategy !== "None" && strategy !== "Webhook") {
    cause(
      "FieldValueNotSupported",
      "spec.conversion.strategy",
      `Unsupported value: "${strategy}": supported values: "None", "Webhook"`,
    );
  } else if (strategy === "None" && webhook !== undefined) {
    cause(
      "FieldValueForbidden",
      "spec.conversion.webhook",
      "Forbidden: should be empty if conversion strategy is None",
    );
  } else if (strategy === "Webhook" && !webhook) {
    cause("FieldValueRequired", "spec.conversion.webhook", "Required value");
  }
  if (strategy !== "Webhook" || !webhook) return;
  const reviewVersions = webhook.conversionReviewVersions;
  if (!Array.isArray(reviewVersions) || reviewVersions.length === 0) {
    cause(
      "FieldValueRequired",
      "spec.conversion.webhook.conversionReviewVersions",
      "Required value",
    );
  } else if (!reviewVersions.some((v) => v === "v1" || v === "v1beta1")) {
    cause(
      "FieldValueInvalid",
      "spec.conversion.webhook.conversionReviewVersions",
      `Invalid value: ${JSON.stringify(reviewVersions)}: must include at least one of v1, v1beta1`,
    );
  }
  const config = webhook.clientConfig ?? {};
  const where = "spec.conversion.webhook.clientConfig";
  if ((config.url === undefined) === (config.service === undefined)) {
    cause("FieldValueRequired", where, "Required value: exactly one of url or service is required");
  }
  if (config.url !== undefined && !/^https?:\/\/[^/?#]/.test(String(config.url))) {
    cause(
      "FieldValueInvalid",
      `${where}.url`,
      `Invalid value: "${config.url}": must be an http:// or https:// URL`,
    );
  }
  if (config.caBundle && caBundlePem(String(config.caBundle)) === undefined) {
    cause("FieldValueInvalid", `${where}.caBundle`, "Invalid value: must be base64");
  }
}

/**
 * Keeps the half of an update a request may not change: the main resource cannot write
 * status, the status subresource can write nothing but status, a pod's resize nothing but its
 * containers' resources.
 */
export function splitStatus(
  type: ResourceType,
  subresource: string | undefined,
  incoming: KubeObject,
  stored: KubeObject,
): KubeObject {
  if (subresource === "resize") return resizedPod(stored, incoming) as KubeObject;
  if (subresource === "status") {
    const next = structuredClone(stored);
    if ("status" in incoming) next.status = incoming.status;
    else delete next.status;
    next.metadata.resourceVersion = incoming.metadata.resourceVersion;
    return next;
  }
  if (!type.statusSubresource) return incoming;
  const next = { ...incoming };
  if ("status" in stored) next.status = stored.status;
  else delete next.status;
  return next;
}

/**
 * A webhook configuration's defaults and the checks callers meet first (k8s.io/kubernetes
 * pkg/apis/admissionregistration: v1 defaults, validation): each webhook named once, exactly one
 * of url and service, a review version sim speaks, sideEffects None or NoneOnDryRun, a timeout
 * of 1 to 30 s, known policies and rules that name operations, groups and versions.
 */
function admitWebhookConfiguration(o: Any, mutating: boolean, causes: StatusCause[]): void {
  const supported = (field: string, value: unknown, values: string[]) => {
    if (value === undefined || values.includes(value as string)) return;
    causes.push({
      reason: "FieldValueNotSupported",
      message: `${field}: Unsupported value: ${JSON.stringify(value)}: supported values: ${
        values.map((v) => `"${v}"`).join(", ")
      }`,
      field,
    });
  };
  const required = (field: string, detail = "") =>
    causes.push({
      reason: "FieldValueRequired",
      message: `${field}: Required value${detail ? `: ${detail}` : ""}`,
      field,
    });
  const seen = new Set<string>();
  for (const [i, w] of ((o.webhooks ?? []) as Any[]).entries()) {
    const at = `webhooks[${i}]`;
    w.failurePolicy ??= "Fail";
    w.matchPolicy ??= "Equivalent";
    w.namespaceSelector ??= {};
    w.objectSelector ??= {};
    w.timeoutSeconds ??= 10;
    if (mutating) w.reinvocationPolicy ??= "Never";
    for (const rule of (w.rules ?? []) as Any[]) rule.scope ??= "*";
    if (w.clientConfig?.service) w.clientConfig.service.port ??= 443;

    if (!w.name) required(`${at}.name`);
    else if (seen.has(w.name)) {
      causes.push({
        reason: "FieldValueDuplicate",
        message: `${at}.name: Duplicate value: "${w.name}"`,
        field: `${at}.name`,
      });
    }
    seen.add(w.name);
    const versions = (w.admissionReviewVersions ?? []) as string[];
    if (!versions.some((v) => v === "v1" || v === "v1beta1")) {
      required(`${at}.admissionReviewVersions`, "must specify one of v1, v1beta1");
    }
    if (w.sideEffects === undefined) {
      required(`${at}.sideEffects`, "must specify one of None, NoneOnDryRun");
    }
    supported(`${at}.sideEffects`, w.sideEffects, ["None", "NoneOnDryRun"]);
    supported(`${at}.failurePolicy`, w.failurePolicy, ["Fail", "Ignore"]);
    supported(`${at}.matchPolicy`, w.matchPolicy, ["Equivalent", "Exact"]);
    if (mutating) {
      supported(`${at}.reinvocationPolicy`, w.reinvocationPolicy, ["IfNeeded", "Never"]);
    }
    if (!(w.timeoutSeconds >= 1 && w.timeoutSeconds <= 30)) {
      causes.push({
        reason: "FieldValueInvalid",
        message: `${at}.timeoutSeconds: Invalid value: ${
          JSON.stringify(w.timeoutSeconds)
        }: the timeout value must be between 1 and 30 seconds`,
        field: `${at}.timeoutSeconds`,
      });
    }
    if (Boolean(w.clientConfig?.url) === Boolean(w.clientConfig?.service)) {
      required(`${at}.clientConfig`, "exactly one of url or service is required");
    }
    for (const [j, rule] of ((w.rules ?? []) as Any[]).entries()) {
      for (const list of ["operations", "apiGroups", "apiVersions"]) {
        if (!Array.isArray(rule[list]) || rule[list].length === 0) {
          required(`${at}.rules[${j}].${list}`);
        }
      }
      supported(`${at}.rules[${j}].scope`, rule.scope, ["*", "Cluster", "Namespaced"]);
    }
  }
}
