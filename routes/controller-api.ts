/**
 * The controller's HTTP surface as schemas: what its routes check requests with (routes/app.ts
 * validates with these), what they answer, and the route list the OpenAPI document is written
 * from (ADR 0046).
 */
import { z } from "zod";
import { type SetKind, setKinds } from "../api/set-ref.ts";
import { AdvancedDaemonSetStatus } from "../api/advanced-daemonset.ts";
import { SetCondition } from "../api/kube-objects.ts";
import { ConversionReview } from "../api/kruise.ts";
import { dnsName } from "./params.ts";
import { refEventTypes, resourceEventTypes } from "./events.ts";
import {
  type ApiInfo,
  authResponses,
  ErrorBodySchema,
  limitResponses,
  openApiDocument,
  openApiRouteDoc,
  type RouteDoc,
} from "./openapi.ts";
import { otaRouteDocs } from "./ota-docs.ts";

export const ReconcileParams = z.object({
  kind: z.enum(setKinds as [SetKind, ...SetKind[]]).meta({ examples: ["advanceddaemonsets"] }),
  namespace: dnsName.max(63).meta({ examples: ["edge"] }),
  name: dnsName.meta({ examples: ["edge-agent"] }),
});
const flag = (description: string) =>
  z.enum(["true", "false", ""]).optional().transform((v) => v === "true" || v === "")
    .describe(description);
export const ReconcileQuery = z.object({
  dryRun: flag("Plan and answer, but write nothing."),
});
export const TickQuery = z.object({
  full: flag("Reconcile every managed set, not only those due."),
});

/** controller/reconciler.ts `ReconcileAnswer`. */
const ReconcileAnswer = z.looseObject({
  set: z.string(),
  managed: z.boolean(),
  dryRun: z.boolean(),
  claimed: z.boolean(),
  conflicts: z.int(),
  actions: z.array(z.looseObject({
    type: z.string(),
    target: z.string(),
    reason: z.string(),
    result: z.string(),
    error: z.string().optional(),
  })),
  awaited: z.array(z.looseObject({
    what: z.string(),
    why: z.string(),
    until: z.string().optional(),
  })),
  requeueAfter: z.number().nullable().describe("Seconds until the set wants another look."),
  status: AdvancedDaemonSetStatus.loose().nullable(),
  conditions: z.array(SetCondition.loose()),
  note: z.string().optional(),
});

/** controller/tick.ts `TickAnswer`. */
const TickAnswer = z.looseObject({
  full: z.boolean(),
  served: z.array(z.enum(setKinds as [SetKind, ...SetKind[]])),
  sets: z.int(),
  reconciled: z.array(z.looseObject({
    set: z.string(),
    why: z.enum(["nextCheckAt", "generation", "resync"]),
    result: z.string(),
    actions: z.int().optional(),
    error: z.string().optional(),
  })),
});

/** A CloudEvent in structured mode; binary mode sends the same attributes as `ce-` headers. */
const CloudEvent = z.looseObject({
  specversion: z.literal("1.0"),
  id: z.string().min(1),
  source: z.string().min(1),
  type: z.string().min(1).describe(
    `Knative ApiServerSource's types are read (${
      [...resourceEventTypes, ...refEventTypes].join(", ")
    }); others are answered as ignored.`,
  ),
  data: z.unknown().optional().describe(
    "For the types read: in resource mode the object, in reference mode its kind, name and namespace (checked then, 400 if not); ignored with the event otherwise.",
  ),
});

/** routes/events.ts `EventRouting`, for each event. */
const EventsAnswer = z.object({
  accepted: z.boolean(),
  events: z.array(z.looseObject({
    type: z.string(),
    keys: z.array(z.string()),
    ignored: z.string().optional(),
  })),
});

const error = (description: string) => ({ description, json: ErrorBodySchema });
const guarded = {
  ...authResponses(ErrorBodySchema),
  ...limitResponses(ErrorBodySchema),
  400: error("A parameter or the body is not valid; the zod issues say which."),
  503: error("The Kubernetes API did not answer; retryable."),
};

export const controllerApiInfo: ApiInfo = {
  title: "edgeroll controller",
  version: "v1",
  description:
    "The reconcile step for its triggers (curl, the relay, Knative's ApiServerSource, the tick) and OpenYurt's OTA API for every node.",
};

const convertRoute: RouteDoc = {
  method: "post",
  path: "/convert",
  summary: "The conversion webhook of Kruise's DaemonSet CRD (served with --kruise)",
  tag: "Kruise",
  auth: false,
  body: { schema: ConversionReview },
  responses: {
    200: {
      description: "Every object converted, or a Failure naming the first that could not be.",
      json: z.looseObject({
        apiVersion: z.string(),
        kind: z.literal("ConversionReview"),
        response: z.looseObject({ uid: z.string(), result: z.looseObject({}) }),
      }),
    },
    400: error("Not a ConversionReview; the zod issues say why."),
    ...limitResponses(ErrorBodySchema),
  },
};

/** Every route the controller serves: `/convert` only in Kruise compatibility mode. */
export function controllerRouteDocs({ kruise }: { kruise: boolean }): RouteDoc[] {
  return [
    {
      method: "get",
      path: "/healthz",
      summary: "Alive",
      tag: "health",
      auth: false,
      responses: { 200: { description: "Alive.", json: z.object({ ok: z.literal(true) }) } },
    },
    {
      method: "get",
      path: "/readyz",
      summary: "Ready: the Kubernetes API answers, and which kinds of set it serves",
      tag: "health",
      auth: false,
      responses: {
        200: {
          description: "Ready.",
          json: z.object({
            ok: z.literal(true),
            kubernetes: z.string().describe("The API server's version."),
            served: z.array(z.string()),
          }),
        },
        503: error("The Kubernetes API did not answer."),
      },
    },
    {
      method: "get",
      path: "/metrics",
      summary: "Prometheus metrics",
      tag: "health",
      auth: false,
      responses: { 200: { description: "The Prometheus text format." } },
    },
    openApiRouteDoc,
    ...(kruise ? [convertRoute] : []),
    ...otaRouteDocs("controller"),
    {
      method: "post",
      path: "/reconcile/:kind/:namespace/:name",
      summary: "Reconcile one set now",
      tag: "reconcile",
      auth: true,
      params: ReconcileParams,
      query: ReconcileQuery,
      responses: {
        200: { description: "What was planned and done.", json: ReconcileAnswer },
        ...guarded,
        404: error("The kind is not served (no CRD)."),
        409: error("Another writer kept changing the set."),
        502: error("The API server answered with an error."),
      },
    },
    {
      method: "post",
      path: "/events",
      summary: "CloudEvents from Knative's ApiServerSource or the relay: the sets they concern",
      description:
        "Structured, batch or binary mode (the attributes as ce- headers); at most the limit's events.",
      tag: "reconcile",
      auth: true,
      body: {
        schema: CloudEvent,
        mediaTypes: ["application/cloudevents+json"],
      },
      responses: {
        202: { description: "Queued.", json: EventsAnswer },
        ...guarded,
        413: error("More events, or a larger body, than the limit."),
      },
    },
    {
      method: "post",
      path: "/tick",
      summary: "The cron tick: reconcile the sets that are due",
      tag: "reconcile",
      auth: true,
      query: TickQuery,
      responses: {
        200: { description: "Each set looked at, and why.", json: TickAnswer },
        ...guarded,
      },
    },
  ];
}

export const controllerOpenApi = (options: { kruise: boolean }) =>
  openApiDocument(controllerApiInfo, controllerRouteDocs(options));
