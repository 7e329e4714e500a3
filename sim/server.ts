/**
 * The simulator's HTTP surface: the Kubernetes REST API over the store (verbs, patch types,
 * subresources, watch streams, Table printing, discovery, OpenAPI) and the `/sim/v1` admin
 * API (faults, stats, node verbs). A plain `(Request) => Promise<Response>` handler, served by
 * `Deno.serve` in `start.ts`. Here: authentication, routing a path to its target and verb, the
 * checks every verb passes (node authorizer, faults); the verbs are in read.ts, watch.ts,
 * write.ts and delete.ts, the admin API in admin.ts.
 */
import type { Verb } from "./faults.ts";
import { ApiError } from "./status.ts";
import {
  AGGREGATED_CONTENT_TYPE,
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  KUBERNETES_VERSION,
} from "./discovery.ts";
import { openApiDocument, openApiIndex } from "./openapi.ts";
import { authorizeNode } from "./node-authorizer.ts";
import type { ServerContext, UserInfo } from "./context.ts";
import { failure, flag, json, methodNotAllowed, notFound, readBody, type Target } from "./http.ts";
import { getObject, listObjects } from "./read.ts";
import { closeWatches, noWatches, watchObjects } from "./watch.ts";
import { createObject, patchObject, updateObject } from "./write.ts";
import { deleteCollection, deleteObject } from "./delete.ts";
import { serveAdmin } from "./admin.ts";

export class SimServer {
  readonly #watches = noWatches();

  constructor(private readonly ctx: ServerContext) {}

  get openWatches(): number {
    return this.#watches.open.size;
  }

  closeWatches(): void {
    closeWatches(this.#watches);
  }

  readonly handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname;
    try {
      if (path.startsWith("/sim/v1/")) return await serveAdmin(this.ctx, this.#watches, req, path);
      if (path === "/healthz" || path === "/livez" || path === "/readyz") {
        return new Response("ok", { headers: { "content-type": "text/plain" } });
      }
      if (path === "/version") return json(KUBERNETES_VERSION);
      const user = this.#authenticate(req);
      return await this.#api(req, url, path, user);
    } catch (err) {
      return failure(err);
    }
  };

  /**
   * A presented bearer token must be one of ours (401 otherwise). A request without one is
   * served as on kube-apiserver's old insecure port: client-go never sends credentials over
   * plain http, and the simulator listens on loopback only (ADR 0008).
   */
  #authenticate(req: Request): UserInfo | undefined {
    const header = req.headers.get("authorization");
    if (header === null) return undefined;
    const token = header.startsWith("Bearer ") ? header.slice(7).trim() : "";
    const user = this.ctx.tokens.get(token);
    if (!user) throw new ApiError(401, "Unauthorized", "Unauthorized");
    return user;
  }

  #api(
    req: Request,
    url: URL,
    path: string,
    user: UserInfo | undefined,
  ): Promise<Response> | Response {
    const { registry } = this.ctx;
    const accept = req.headers.get("accept") ?? "";
    if (path === "/api" || path === "/apis") {
      if (accept.includes("as=APIGroupDiscoveryList")) {
        const beta = !/v=v2[;,\s]|v=v2$/.test(accept) && accept.includes("v=v2beta1");
        const body = aggregatedDiscovery(registry, path === "/api");
        if (beta) body.apiVersion = "apidiscovery.k8s.io/v2beta1";
        return json(body, 200, {
          "content-type": beta
            ? AGGREGATED_CONTENT_TYPE.replace("v=v2", "v=v2beta1")
            : AGGREGATED_CONTENT_TYPE,
        });
      }
      return json(path === "/api" ? apiVersions(url.host) : apiGroupList(registry));
    }
    if (path === "/openapi/v3") return json(openApiIndex(registry));
    if (path.startsWith("/openapi/v3/")) {
      const doc = openApiDocument(registry, path.slice("/openapi/v3/".length));
      if (!doc) throw notFound();
      return json(doc);
    }
    const segments = path.split("/").filter((s) => s.length > 0).map(decodeURIComponent);
    let group: string, version: string, rest: string[];
    if (segments[0] === "api" && segments[1] === "v1") {
      [group, version, rest] = ["", "v1", segments.slice(2)];
    } else if (segments[0] === "apis" && segments.length >= 2) {
      if (segments.length === 2) {
        const found = apiGroup(registry, segments[1]);
        if (!found) throw notFound();
        return json(found);
      }
      [group, version, rest] = [segments[1], segments[2], segments.slice(3)];
    } else {
      throw notFound();
    }
    if (rest.length === 0) {
      const list = apiResourceList(registry, group, version);
      if (!list) throw notFound();
      return json(list);
    }
    return this.#resource(req, url, { ...this.#target(group, version, rest), user }, user);
  }

  #target(group: string, version: string, rest: string[]): Target {
    const { registry } = this.ctx;
    const namespacedType = rest[0] === "namespaces" && rest.length >= 3
      ? registry.find(group, version, rest[2])
      : undefined;
    if (namespacedType?.namespaced) {
      if (rest.length > 5) throw notFound();
      return { type: namespacedType, namespace: rest[1], name: rest[3], subresource: rest[4] };
    }
    const type = registry.find(group, version, rest[0]);
    if (!type || rest.length > 3) throw notFound();
    return { type, name: rest[1], subresource: rest[2] };
  }

  #verb(req: Request, url: URL, target: Target): Verb {
    const collection = target.name === undefined;
    switch (req.method) {
      case "GET":
        if (!collection) return "get";
        return flag(url.searchParams.get("watch")) ? "watch" : "list";
      case "POST":
        if (collection || target.subresource) return "create";
        break;
      case "PUT":
        if (!collection) return "update";
        break;
      case "PATCH":
        if (!collection) return "patch";
        break;
      case "DELETE":
        return collection ? "deletecollection" : "delete";
    }
    throw methodNotAllowed();
  }

  async #resource(
    req: Request,
    url: URL,
    target: Target,
    user: UserInfo | undefined,
  ): Promise<Response> {
    const verb = this.#verb(req, url, target);
    const { type, subresource } = target;
    authorizeNode(
      user,
      { verb, ...target, fieldSelector: url.searchParams.get("fieldSelector") },
      this.ctx.store,
    );
    this.ctx.stats.count(verb, subresource ? `${type.plural}/${subresource}` : type.plural);
    const allowed = subresource === "status"
      ? ["get", "update", "patch"].includes(verb) && type.statusSubresource
      : subresource === "resize"
      ? ["get", "update", "patch"].includes(verb) && type.storage === "pods"
      : subresource
      ? type.storage === "pods" && (subresource === "eviction" || subresource === "binding")
      : type.verbs.includes(verb);
    if (!allowed) {
      if (subresource) throw notFound();
      throw methodNotAllowed();
    }
    const faults = this.ctx.faults;
    if (faults.current.latencyMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, faults.current.latencyMs));
    }
    const injected = faults.errorFor(verb, type.plural);
    if (injected) return failure(injected, target);
    try {
      switch (verb) {
        case "get":
          return await getObject(this.ctx, req, url, target);
        case "list":
          return await listObjects(this.ctx, req, url, target);
        case "watch":
          return watchObjects(this.ctx, this.#watches, req, url, target);
        case "create":
          return await createObject(this.ctx, target, await readBody(req), url.searchParams);
        case "update":
          return await updateObject(this.ctx, target, await readBody(req), url.searchParams);
        case "patch":
          return patchObject(this.ctx, req, target, url.searchParams);
        case "delete":
          return await deleteObject(this.ctx, target, await readBody(req), url.searchParams);
        case "deletecollection":
          return await deleteCollection(this.ctx, url, target, await readBody(req));
      }
    } catch (err) {
      return failure(err, target);
    }
  }
}
