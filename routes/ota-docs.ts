/**
 * The OTA routes (routes/ota.ts) as the OpenAPI document describes them, on the controller and
 * on the edge agent. Kept apart from the routes: these use zod, whose code the edge agent does
 * not load (ADR 0019); its document is generated ahead (routes/openapi/). The names' schemas are
 * built from the same rules the routes check (routes/names.ts).
 */
import { z } from "zod";
import { dnsName, namespaceName } from "./params.ts";
import {
  type ApiInfo,
  authResponses,
  limitResponses,
  openApiDocument,
  openApiRouteDoc,
  type ResponseDoc,
  type RouteDoc,
} from "./openapi.ts";

const PodParams = z.object({ ns: namespaceName, pod: dnsName });

const NodeQuery = z.object({
  node: dnsName.optional().describe(
    "The node whose pods to list; the edge agent answers only for its own.",
  ),
});

const UpgradeQuery = z.object({
  whenConnected: z.enum(["true", "false"]).optional().describe(
    "Edge agent: while the node is cut off, record the upgrade and carry it out once the link returns (202).",
  ),
});

/** A PodList, with what the edge agent adds. */
const PodList = z.looseObject({
  kind: z.literal("PodList"),
  apiVersion: z.literal("v1"),
  items: z.array(z.looseObject({
    metadata: z.looseObject({ name: z.string(), namespace: z.string() }),
  })),
  upgradeRequests: z.array(z.looseObject({
    namespace: z.string(),
    name: z.string(),
    uid: z.string(),
    state: z.enum(["pending", "started", "replaced", "refused"]),
  })).optional().describe("Edge agent: upgrades asked for while cut off, and how they ended."),
});

const text = (description: string): ResponseDoc => ({ description });

export function otaRouteDocs(where: "controller" | "edge agent"): RouteDoc[] {
  const tag = "OTA (OpenYurt)";
  /** Answers every OTA route may give (plain text, as YurtHub's); the controller's limits. */
  const otaErrors: Record<number, ResponseDoc> = {
    400: text("A name or a query value is not valid; each bad field on a line."),
    ...authResponses(undefined),
    ...(where === "controller" ? limitResponses(undefined) : {}),
    503: text("The API server cannot be reached (the node is cut off from the cloud)."),
  };
  const podErrors: Record<number, ResponseDoc> = {
    ...otaErrors,
    403: text(
      "A pre-check failed: not this node's, not a DaemonSet's, not marked, or the token's.",
    ),
    404: text("No such pod."),
    500: text("The API server refused the change."),
  };
  const upgradePath = "/openyurt.io/v1/namespaces/:ns/pods/:pod/upgrade";
  const imagePullPath = "/openyurt.io/v1/namespaces/:ns/pods/:pod/imagepull";
  /** The first listed pod's names, for the routes that take a pod. */
  const firstPod = {
    ns: "$response.body#/items/0/metadata/namespace",
    pod: "$response.body#/items/0/metadata/name",
  };
  const pods = (path: string): RouteDoc => ({
    method: "get",
    path,
    summary: "The pods of a node, as YurtHub lists them",
    description: where === "edge agent"
      ? "From the agent's cache: answered while the node is cut off, with the data's age in `Age`."
      : "Read from the API server.",
    tag,
    auth: true,
    query: NodeQuery,
    responses: {
      200: {
        description: "The pods.",
        json: PodList,
        links: {
          UpgradeFirstPod: { method: "post", path: upgradePath, parameters: firstPod },
          PullFirstPodImages: { method: "post", path: imagePullPath, parameters: firstPod },
        },
        ...(where === "edge agent"
          ? { headers: { Age: "Seconds since the list last matched the API server." } }
          : {}),
      },
      ...otaErrors,
      403: text("The token's user may not list, or (edge agent) another node was asked for."),
    },
  });
  return [
    pods("/pods"),
    pods("/openyurt.io/v1/pods"),
    {
      method: "post",
      path: upgradePath,
      summary: "Upgrade a pod marked PodNeedUpgrade: delete it for its DaemonSet to recreate",
      tag,
      auth: true,
      params: PodParams,
      query: UpgradeQuery,
      responses: where === "edge agent"
        ? {
          200: text("Start updating pod <ns>/<pod>"),
          202: text("Recorded while cut off; carried out when the link returns."),
          ...podErrors,
        }
        : {
          200: text("Start updating pod <ns>/<pod>"),
          ...podErrors,
          400: text("Not valid, or whenConnected=true (served by the edge agent only)."),
        },
    },
    {
      method: "post",
      path: imagePullPath,
      summary: "Pull a marked pod's new images on its node before the upgrade",
      description: "Sets PodImageReady False; the set's reconcile runs the pull (ADR 0034).",
      tag,
      auth: true,
      params: PodParams,
      responses: { 200: text("Image pre-pull requested for pod <ns>/<pod>"), ...podErrors },
    },
  ];
}

/** The edge agent's whole surface. */
export function edgeAgentRouteDocs(): RouteDoc[] {
  return [
    {
      method: "get",
      path: "/healthz",
      summary: "Alive, and whether the node's pod watch is connected",
      tag: "health",
      auth: false,
      responses: {
        200: {
          description: "Alive.",
          json: z.object({ ok: z.literal(true), node: z.string(), connected: z.boolean() }),
        },
      },
    },
    openApiRouteDoc,
    ...otaRouteDocs("edge agent"),
  ];
}

export const edgeAgentApiInfo: ApiInfo = {
  title: "edgeroll edge agent",
  version: "v1",
  description:
    "OpenYurt's OTA API for one node, as YurtHub serves it on 127.0.0.1:10267, from a cache that outlives the link to the cloud. On loopback without a token the OTA routes ask for none, as YurtHub's; given a token (--token-file, EDGEROLL_TOKEN) or --require-token, they ask for it.",
};

export const edgeAgentOpenApi = () => openApiDocument(edgeAgentApiInfo, edgeAgentRouteDocs());
