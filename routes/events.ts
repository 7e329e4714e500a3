/**
 * `POST /events`: CloudEvents 1.0 (binary, structured or batch) of the types Knative's
 * ApiServerSource sends, which our relay sends too. Each event is checked here and becomes
 * the controller's queue keys (`controller/queue-keys.ts`).
 */
import { type CloudEventV1, HTTP } from "cloudevents";
import { z } from "zod";
import {
  everySetKey,
  keysForChange,
  namespaceKey,
  type NodeChanges,
  type QueueKey,
  setQueueKey,
} from "../controller/queue-keys.ts";
import { setKindOf } from "../api/set-ref.ts";
import { badRequest } from "./errors.ts";
import { dnsName, namespaceName } from "./params.ts";

export const eventTypePrefix = "dev.knative.apiserver.";
const verbs = ["add", "update", "delete"];
export const resourceEventTypes = verbs.map((v) => `${eventTypePrefix}resource.${v}`);
export const refEventTypes = verbs.map((v) => `${eventTypePrefix}ref.${v}`);

const OwnerRef = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  controller: z.boolean().optional(),
});

/** Resource mode: the object itself. Only what the mapping reads is named. */
const ResourceData = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    ownerReferences: z.array(OwnerRef).optional(),
  }),
  spec: z.looseObject({}).optional(),
  status: z.looseObject({
    conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
  }).optional(),
});
export type ResourceData = z.infer<typeof ResourceData>;

/** Reference mode: which object, not its content. */
const RefData = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string(),
  name: z.string().min(1),
  namespace: z.string().optional(),
});

const requiredAttributes = ["specversion", "id", "source", "type"] as const;

/**
 * CloudEvents 1.0's required context attributes, which the SDK would otherwise fill in or let
 * pass: every event, binary (`ce-*` headers) or structured and batched (JSON members), names
 * them all and is version 1.0, or the request is a 400 saying what is wrong.
 */
function requireAttributes(headers: Headers, body: string): void {
  const type = headers.get("content-type") ?? "";
  let events: unknown[];
  if (type.startsWith("application/cloudevents")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw badRequest("not a CloudEvent: the body is not JSON");
    }
    events = type.startsWith("application/cloudevents-batch") && Array.isArray(parsed)
      ? parsed
      : [parsed];
  } else {
    events = [Object.fromEntries(requiredAttributes.map((a) => [a, headers.get(`ce-${a}`)]))];
  }
  events.forEach((event, i) => {
    const missing = requiredAttributes.filter((a) => {
      const value = (event as Record<string, unknown> | null)?.[a];
      return typeof value !== "string" || value === "";
    });
    if (missing.length > 0) {
      throw badRequest(`not a CloudEvent: event ${i} lacks ${missing.join(", ")}`);
    }
    // The SDK keeps whatever version it is given (found by the fuzz stage, ADR 0047).
    const version = (event as Record<string, unknown>).specversion;
    if (version !== "1.0") {
      throw badRequest(
        `not a CloudEvent 1.0: event ${i} has specversion ${JSON.stringify(version)}`,
      );
    }
  });
}

/** Reads the request as CloudEvents; anything that is not one is a 400. */
export function parseCloudEvents(headers: Headers, body: string): CloudEventV1<unknown>[] {
  requireAttributes(headers, body);
  try {
    const parsed = HTTP.toEvent({ headers: Object.fromEntries(headers), body });
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch (err) {
    throw badRequest(`not a CloudEvent: ${(err as Error).message}`);
  }
}

export interface EventRouting {
  type: string;
  /** Queue keys to run; empty for an event that concerns no set. */
  keys: QueueKey[];
  /** Set when the type is not one we read. */
  ignored?: string;
}

function dataOf(event: CloudEventV1<unknown>): unknown {
  const data = event.data ?? (event.data_base64 ? atob(event.data_base64) : undefined);
  if (typeof data !== "string") return data;
  try {
    return JSON.parse(data);
  } catch {
    throw badRequest(`event ${event.id}: data is not JSON`);
  }
}

/** Which sets an event concerns. */
export function routeEvent(event: CloudEventV1<unknown>, nodes: NodeChanges): EventRouting {
  const type = event.type;
  if (resourceEventTypes.includes(type)) {
    const parsed = ResourceData.safeParse(dataOf(event));
    if (!parsed.success) {
      throw badRequest(`event ${event.id}: data is not a Kubernetes object`, parsed.error.issues);
    }
    const { namespace, name } = parsed.data.metadata;
    const invalid = invalidName(namespace, name);
    if (invalid) return { type, keys: [], ignored: `event ${event.id}: ${invalid}` };
    return { type, keys: keysForChange(parsed.data, type.endsWith(".delete"), nodes) };
  }
  if (refEventTypes.includes(type)) {
    const parsed = RefData.safeParse(dataOf(event));
    if (!parsed.success) {
      throw badRequest(`event ${event.id}: data is not an object reference`, parsed.error.issues);
    }
    const { apiVersion, kind, name, namespace = "" } = parsed.data;
    const invalid = invalidName(parsed.data.namespace, name);
    if (invalid) return { type, keys: [], ignored: `event ${event.id}: ${invalid}` };
    const setKind = setKindOf(apiVersion, kind);
    if (setKind) return { type, keys: [setQueueKey({ kind: setKind, namespace, name })] };
    // A reference says nothing of owners or labels: widen to what it may concern.
    if (kind === "Pod") return { type, keys: [namespaceKey(namespace)] };
    if (kind === "Node") return { type, keys: [everySetKey] };
    return { type, keys: [] };
  }
  return { type, keys: [], ignored: `event type ${type} is not one edgeroll reads` };
}

/** Why `namespace/name` cannot name an object, or undefined when they can. */
function invalidName(namespace: string | undefined, name: string): string | undefined {
  if (namespace !== undefined && !namespaceName.safeParse(namespace).success) {
    return `namespace "${namespace}" is not a DNS-1123 label`;
  }
  if (!dnsName.safeParse(name).success) return `name "${name}" is not a DNS-1123 subdomain`;
  return undefined;
}
