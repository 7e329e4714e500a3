/**
 * Mutating and validating admission webhooks, called as kube-apiserver calls them (issue 37):
 * the webhooks of every MutatingWebhookConfiguration (in the order of the configurations' names,
 * then their own) before the object is admitted, each patch applied in turn; then those of every
 * ValidatingWebhookConfiguration, which may only refuse. A webhook is called when one of its
 * rules names the operation, group, version and resource (or subresource) and scope, and the
 * object (or the old one) matches its objectSelector and its namespace matches its
 * namespaceSelector. A request in another version of a resource a rule names in one version is
 * sent in that version under `matchPolicy: Equivalent` (the default), converted as the CRD
 * converts, and the patched object converted back.
 *
 * The AdmissionReview round trip follows k8s.io/apiserver's webhook dispatchers (v0.33): a
 * webhook that cannot be called, times out or answers something invalid fails the request with
 * a 500 under `failurePolicy: Fail` (the default) and is passed over under `Ignore`; a refusal is
 * answered with the webhook's own Status, its code at least 400, its message prefixed
 * `admission webhook "NAME" denied the request`. `reinvocationPolicy: IfNeeded` calls a mutating
 * webhook once more when a later one changed the object. Warnings come back as Warning headers.
 * Not modelled: matchConditions (CEL), webhooks named by a Service (sim resolves no Services:
 * such a call fails as an unreachable one does), DELETE and CONNECT operations.
 */
import type { KubeObject, Store } from "./store.ts";
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";
import { ApiError, type StatusReason } from "./status.ts";
import { labelSelectorMatcher } from "./selectors.ts";
import { applyJsonPatch, isMap, type Json } from "./patch.ts";
import { caBundlePem } from "./crds.ts";
import type { UserInfo } from "./context.ts";
import type { Conversions } from "./conversion.ts";
import type { WebhookClient } from "./webhook-client.ts";
import { canonical } from "./canonical.ts";
import { warnedError } from "./http.ts";

export const mutatingConfigurations = "mutatingwebhookconfigurations.admissionregistration.k8s.io";
export const validatingConfigurations =
  "validatingwebhookconfigurations.admissionregistration.k8s.io";

type Operation = "CREATE" | "UPDATE";
type Obj = Record<string, unknown>;

/** What a request asks, in its own version (kube-apiserver's admission.Attributes). */
export interface AdmissionRequest {
  type: ResourceType;
  operation: Operation;
  object: KubeObject;
  oldObject?: KubeObject;
  namespace?: string;
  name: string;
  subresource?: string;
  user?: UserInfo;
  dryRun: boolean;
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

interface Rule {
  apiGroups?: string[];
  apiVersions?: string[];
  operations?: string[];
  resources?: string[];
  scope?: string;
}

/** A webhook as the API server stores it, its defaults set (sim/admission.ts). */
export interface Webhook {
  name: string;
  clientConfig: {
    url?: string;
    caBundle?: string;
    service?: { namespace?: string; name?: string };
  };
  rules?: Rule[];
  failurePolicy?: "Fail" | "Ignore";
  matchPolicy?: "Exact" | "Equivalent";
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  admissionReviewVersions?: string[];
  timeoutSeconds?: number;
  reinvocationPolicy?: "Never" | "IfNeeded";
}

/** Whether one rule names this request's operation, group, version, resource and scope. */
export function ruleMatches(
  rule: Rule,
  request: { operation: string; type: ResourceType; subresource?: string },
  version = request.type.version,
): boolean {
  const named = (list: string[] | undefined, value: string) =>
    (list ?? []).some((v) => v === "*" || v === value);
  const { type, subresource } = request;
  const resource = subresource ? `${type.plural}/${subresource}` : type.plural;
  const resources = (rule.resources ?? []).some((r) =>
    r === "*/*" || r === resource || (!subresource && r === "*") ||
    (subresource !== undefined && (r === `*/${subresource}` || r === `${type.plural}/*`))
  );
  const scope = rule.scope ?? "*";
  const scoped = scope === "*" || (scope === "Namespaced") === type.namespaced;
  return named(rule.operations, request.operation) && named(rule.apiGroups, type.group) &&
    named(rule.apiVersions, version) && resources && scoped;
}

/** Labels an objectSelector or namespaceSelector is checked against. */
function labelsOf(object: KubeObject | undefined): Record<string, string> {
  return (object?.metadata?.labels ?? {}) as Record<string, string>;
}

function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  // deno-lint-ignore no-explicit-any -- the same selector shape selectors.ts reads
  return labelSelectorMatcher(selector as any)(labels);
}

/** The text of a failed call, as ErrCallingWebhook words it. */
class CallError extends Error {}

export class AdmissionWebhooks {
  constructor(
    private readonly store: Store,
    private readonly registry: ResourceRegistry,
    private readonly conversions: Conversions,
    private readonly client: WebhookClient,
  ) {}

  /**
   * The object after every matching mutating webhook, and the warnings they gave; throws the
   * Status the request is answered with when one refuses or fails closed.
   */
  async mutate(request: AdmissionRequest): Promise<{ object: KubeObject; warnings: string[] }> {
    const warnings: string[] = [];
    let object = request.object;
    const webhooks = this.#webhooks(mutatingConfigurations);
    const reinvoke: Webhook[] = [];
    try {
      for (const webhook of webhooks) {
        const before = object;
        object = await this.#call(webhook, { ...request, object }, true, warnings);
        // The same object when the webhook was not called or sent no patch; a patch may change
        // nothing, as kube-apiserver's deep comparison finds.
        if (object !== before && canonical(object) !== canonical(before)) {
          // A change invites every IfNeeded webhook called before this one to look again.
          const earlier = webhooks.slice(0, webhooks.indexOf(webhook));
          for (const w of earlier) {
            if (w.reinvocationPolicy === "IfNeeded" && !reinvoke.includes(w)) reinvoke.push(w);
          }
        }
      }
      for (const webhook of reinvoke) {
        object = await this.#call(webhook, { ...request, object }, true, warnings);
      }
    } catch (err) {
      throw warnedError(err, warnings);
    }
    return { object, warnings };
  }

  /** Calls every matching validating webhook; throws the first refusal or closed failure. */
  async validate(request: AdmissionRequest): Promise<string[]> {
    const warnings: string[] = [];
    const calls = this.#webhooks(validatingConfigurations).map((webhook) =>
      this.#call(webhook, request, false, warnings)
    );
    const settled = await Promise.allSettled(calls);
    const refused = settled.find((s) => s.status === "rejected");
    if (refused) throw (refused as PromiseRejectedResult).reason;
    return warnings;
  }

  /** The webhooks of one kind of configuration, configurations in name order. */
  #webhooks(resource: string): Webhook[] {
    return this.store.scan(resource).flatMap((c) => (c.webhooks ?? []) as Webhook[]);
  }

  /** The type a webhook is called in for this request, or undefined when it is not called. */
  #typeFor(webhook: Webhook, request: AdmissionRequest): ResourceType | undefined {
    const rules = webhook.rules ?? [];
    if (rules.some((r) => ruleMatches(r, request))) return request.type;
    if ((webhook.matchPolicy ?? "Equivalent") !== "Equivalent") return undefined;
    const { group, plural } = request.type;
    return this.registry.all().find((t) =>
      t.group === group && t.plural === plural && t.version !== request.type.version &&
      rules.some((r) => ruleMatches(r, request, t.version))
    );
  }

  #selected(webhook: Webhook, request: AdmissionRequest): boolean {
    const objectSelected = [request.object, request.oldObject].some((o) =>
      o !== undefined && selects(webhook.objectSelector, labelsOf(o))
    );
    if (!objectSelected) return false;
    const { type, namespace } = request;
    if (!type.namespaced) {
      return type.storage !== "namespaces" ||
        selects(webhook.namespaceSelector, labelsOf(request.object ?? request.oldObject));
    }
    const ns = this.store.peek("namespaces", undefined, namespace ?? "");
    return selects(webhook.namespaceSelector, labelsOf(ns));
  }

  /** `object` in another version of its resource, as the CRD converts it. */
  async #inVersion(object: KubeObject, from: ResourceType, to: ResourceType): Promise<KubeObject> {
    if (from === to) return object;
    const conversion = from.custom?.conversion;
    if (!conversion) return { ...object, apiVersion: apiVersionOf(to) };
    const [converted] = await this.conversions.convert(conversion, [object], apiVersionOf(to));
    return converted;
  }

  /**
   * One webhook's turn: not called when it does not match; otherwise its review sent and its
   * answer applied (mutating) or checked (validating). Answers the object as it is after it.
   */
  async #call(
    webhook: Webhook,
    request: AdmissionRequest,
    mutating: boolean,
    warnings: string[],
  ): Promise<KubeObject> {
    const type = this.#typeFor(webhook, request);
    if (!type || !this.#selected(webhook, request)) return request.object;
    try {
      const object = await this.#inVersion(request.object, request.type, type);
      const oldObject = request.oldObject &&
        await this.#inVersion(request.oldObject, request.type, type);
      const answer = await this.#review(webhook, request, type, object, oldObject, mutating);
      warnings.push(...answer.warnings);
      if (!answer.allowed) throw refusal(webhook.name, answer.status);
      if (!answer.patch) return request.object;
      let patched: KubeObject;
      try {
        patched = applyJsonPatch(object as Json, answer.patch) as KubeObject;
      } catch (err) {
        throw new ApiError(
          500,
          "InternalError",
          `Internal error occurred: ${(err as Error).message}`,
        );
      }
      return await this.#inVersion(patched, type, request.type);
    } catch (err) {
      if (!(err instanceof CallError)) throw err;
      if (webhook.failurePolicy === "Ignore") return request.object;
      const message = `failed calling webhook "${webhook.name}": ${err.message}`;
      throw new ApiError(500, "InternalError", `Internal error occurred: ${message}`, [{
        message,
      }]);
    }
  }

  /** Sends the AdmissionReview and checks the answer as VerifyAdmissionResponse does. */
  async #review(
    webhook: Webhook,
    request: AdmissionRequest,
    type: ResourceType,
    object: KubeObject,
    oldObject: KubeObject | undefined,
    mutating: boolean,
  ): Promise<{ allowed: boolean; status?: Obj; patch?: unknown; warnings: string[] }> {
    const version = (webhook.admissionReviewVersions ?? []).find((v) =>
      v === "v1" || v === "v1beta1"
    );
    if (!version) {
      throw new CallError("webhook does not accept v1 or v1beta1 AdmissionReview");
    }
    const { url, caBundle, service } = webhook.clientConfig ?? {};
    if (service || !url) {
      throw new CallError(
        `failed to call webhook: sim resolves no Services (clientConfig.service ${service?.namespace}/${service?.name})`,
      );
    }
    const uid = crypto.randomUUID();
    const gvk = (t: ResourceType) => ({ group: t.group, version: t.version, kind: t.kind });
    const gvr = (t: ResourceType) => ({ group: t.group, version: t.version, resource: t.plural });
    const body = JSON.stringify({
      apiVersion: `admission.k8s.io/${version}`,
      kind: "AdmissionReview",
      request: {
        uid,
        kind: gvk(type),
        resource: gvr(type),
        ...(request.subresource ? { subResource: request.subresource } : {}),
        requestKind: gvk(request.type),
        requestResource: gvr(request.type),
        ...(request.subresource ? { requestSubResource: request.subresource } : {}),
        name: request.name,
        ...(request.namespace ? { namespace: request.namespace } : {}),
        operation: request.operation,
        userInfo: request.user ?? { username: "system:anonymous", groups: [] },
        object,
        oldObject: oldObject ?? null,
        dryRun: request.dryRun,
        options: {
          apiVersion: "meta.k8s.io/v1",
          kind: request.operation === "CREATE" ? "CreateOptions" : "UpdateOptions",
        },
      },
    });
    let text: string;
    try {
      const timeoutMs = (webhook.timeoutSeconds ?? 10) * 1000;
      const ca = caBundle ? caBundlePem(caBundle) : undefined;
      text = await this.client.post(url, ca, body, timeoutMs);
    } catch (err) {
      throw new CallError(`failed to call webhook: ${(err as Error).message}`);
    }
    const invalid = (why: string) => new CallError(`received invalid webhook response: ${why}`);
    let review: unknown;
    try {
      review = JSON.parse(text);
    } catch (err) {
      throw new CallError(`failed to call webhook: ${(err as Error).message}`);
    }
    if (!isMap<unknown>(review) || !isMap<unknown>(review.response)) {
      throw invalid("webhook response was absent");
    }
    const expected = `admission.k8s.io/${version}`;
    if (review.apiVersion !== expected || review.kind !== "AdmissionReview") {
      throw invalid(
        `expected webhook response of ${expected}, Kind=AdmissionReview, got ${review.apiVersion}, Kind=${review.kind}`,
      );
    }
    const response = review.response;
    if (version === "v1" && response.uid !== uid) {
      throw invalid(`expected response.uid="${uid}", got "${response.uid ?? ""}"`);
    }
    const warnings = Array.isArray(response.warnings) ? response.warnings.map(String) : [];
    const allowed = response.allowed === true;
    const status = isMap<unknown>(response.status) ? response.status : undefined;
    if (response.patch === undefined || response.patch === null || !allowed) {
      if (response.patchType !== undefined && response.patchType !== null && allowed) {
        throw invalid("webhook returned response.patchType but not response.patch");
      }
      return { allowed, status, warnings };
    }
    if (!mutating) throw invalid("validating webhook may not return response.patch");
    if (response.patchType === undefined || response.patchType === null) {
      throw invalid("webhook returned response.patch but not response.patchType");
    }
    if (response.patchType !== "JSONPatch") {
      throw invalid(`webhook returned invalid response.patchType of "${response.patchType}"`);
    }
    let patch: unknown;
    try {
      patch = JSON.parse(new TextDecoder().decode(
        Uint8Array.from(atob(String(response.patch)), (c) => c.charCodeAt(0)),
      ));
    } catch (err) {
      throw new ApiError(
        500,
        "InternalError",
        `Internal error occurred: ${(err as Error).message}`,
      );
    }
    return { allowed, status, patch, warnings };
  }
}

/** A webhook's refusal as the request's answer (webhookerrors.ToStatusErr). */
function refusal(name: string, status: Obj | undefined): ApiError {
  const deniedBy = `admission webhook "${name}" denied the request`;
  const code = typeof status?.code === "number" && status.code >= 400 ? status.code : 400;
  const message = typeof status?.message === "string" && status.message
    ? `${deniedBy}: ${status.message}`
    : typeof status?.reason === "string" && status.reason
    ? `${deniedBy}: ${status.reason}`
    : `${deniedBy} without explanation`;
  const reason = (typeof status?.reason === "string" ? status.reason : "") as StatusReason;
  return new ApiError(code, reason, message);
}
