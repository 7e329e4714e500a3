/**
 * The OpenAPI 3.1 document of an app's HTTP surface, written from the zod schemas its routes
 * check requests with (zod's own JSON Schema output, draft 2020-12 as OpenAPI 3.1 takes it;
 * ADR 0046). Each app lists its routes as `RouteDoc`s beside the routes themselves; a test holds
 * the list to what the Hono app serves.
 */
import { z } from "zod";

export interface ResponseDoc {
  description: string;
  /** A JSON body of this shape; without it, the body is `text/plain`. */
  json?: z.ZodType;
  /** Headers the answer carries, each a description. */
  headers?: Record<string, string>;
  /** Operations this answer supplies parameters of (OpenAPI links; schemathesis follows them). */
  links?: Record<
    string,
    { method: RouteDoc["method"]; path: string; parameters: Record<string, string> }
  >;
}

export interface RouteDoc {
  method: "get" | "post";
  /** As Hono writes it (`/reconcile/:kind`); `{kind}` in the document. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Whether the bearer token is asked for. */
  auth: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A body of this shape, sent as each of these media types (`application/json` if none). */
  body?: { schema: z.ZodType; mediaTypes?: string[] };
  responses: Record<number, ResponseDoc>;
}

export interface ApiInfo {
  title: string;
  version: string;
  description: string;
}

/** `GET /openapi.json`, which both apps serve. */
export const openApiRouteDoc: RouteDoc = {
  method: "get",
  path: "/openapi.json",
  summary: "This document",
  tag: "health",
  auth: false,
  responses: { 200: { description: "OpenAPI 3.1.", json: z.looseObject({}) } },
};

/** The error every JSON route answers with (routes/errors.ts `ErrorBody`). */
export const ErrorBodySchema = z.object({
  error: z.object({
    status: z.int(),
    reason: z.string(),
    message: z.string(),
    issues: z.array(z.looseObject({ message: z.string() })).optional(),
    retryable: z.boolean().optional(),
  }),
});

/** The answers every route of an app with these limits may give (routes/limits.ts). */
export const limitResponses = (json: z.ZodType | undefined): Record<number, ResponseDoc> => ({
  413: { description: "The body or the headers are larger than the limit.", json },
  504: { description: "The request took longer than the limit.", json },
});

/** The bearer guard's answers (routes/auth.ts). */
export const authResponses = (json: z.ZodType | undefined): Record<number, ResponseDoc> => ({
  401: { description: "No bearer token, or one the authenticator rejects.", json },
  403: { description: "The token's user may not call this route.", json },
  429: {
    description: "Too many token reviews at once; try again.",
    json,
    headers: { "Retry-After": "Seconds to wait." },
  },
});

const jsonSchema = (schema: z.ZodType, io: "input" | "output") => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  });
  return rest;
};

/** `/a/:b` as OpenAPI writes it: `/a/{b}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function parameters(where: "path" | "query", schema: z.ZodObject | undefined) {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    in: where,
    required: where === "path" || !(field as z.ZodType).safeParse(undefined).success,
    schema: jsonSchema(field as z.ZodType, "input"),
  }));
}

/** `post /a/:b/c` as `postABC`: the operation's id, which links name. */
const operationId = (method: string, path: string) =>
  method + openApiPath(path).replace(/[{}]/g, "").replace(
    /[^A-Za-z0-9]+(.)?/g,
    (_, c: string | undefined) => (c ?? "").toUpperCase(),
  );

function operation(route: RouteDoc) {
  const responses = Object.fromEntries(
    Object.entries(route.responses).map(([status, doc]) => [status, {
      description: doc.description,
      ...(doc.headers
        ? {
          headers: Object.fromEntries(
            Object.entries(doc.headers).map((
              [name, description],
            ) => [name, { description, schema: { type: "string" } }]),
          ),
        }
        : {}),
      content: doc.json
        ? { "application/json": { schema: jsonSchema(doc.json, "output") } }
        : { "text/plain": { schema: { type: "string" } } },
      ...(doc.links
        ? {
          links: Object.fromEntries(
            Object.entries(doc.links).map(([name, link]) => [name, {
              operationId: operationId(link.method, link.path),
              parameters: link.parameters,
            }]),
          ),
        }
        : {}),
    }]),
  );
  const params = [...parameters("path", route.params), ...parameters("query", route.query)];
  return {
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    operationId: operationId(route.method, route.path),
    tags: [route.tag],
    security: route.auth ? [{ bearer: [] }] : [],
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(route.body
      ? {
        requestBody: {
          required: true,
          content: Object.fromEntries(
            (route.body.mediaTypes ?? ["application/json"]).map((type) => [type, {
              schema: jsonSchema(route.body!.schema, "input"),
            }]),
          ),
        },
      }
      : {}),
    responses,
  };
}

/** The document: one path item per route path, one operation per method. */
export function openApiDocument(info: ApiInfo, routes: RouteDoc[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    if (paths[path]?.[route.method]) throw new Error(`${route.method} ${path} is listed twice`);
    paths[path] = { ...paths[path], [route.method]: operation(route) };
  }
  return {
    openapi: "3.1.0",
    info,
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A Kubernetes service account token (TokenReview) or the static token.",
        },
      },
    },
  };
}
