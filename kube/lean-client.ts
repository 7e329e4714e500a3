/**
 * The edge agent's Kubernetes calls, and only those, over `node:https` (which Deno provides
 * too): list and watch the pods bound to one node, read one, delete one with a UID
 * precondition. Exactly what the API server's Node authorizer lets a node's own credentials do
 * (ADR 0021). No @kubernetes/client-node: its generated API and model classes, all loaded by
 * any import of it, were most of the agent's own memory (ADR 0019).
 */
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { IncomingMessage } from "node:http";
import type { Pod } from "../api/kube-objects.ts";
import type { Access } from "./access.ts";
import { KubeError, toKubeError } from "./errors.ts";
import { JsonLines } from "../lib/json-lines.ts";
import { type LeanConnection, readSecret } from "./lean-config.ts";
import { concatBytes } from "../lib/bytes.ts";

/** What each call of `LeanKubeClient` asks of the API server (checked in tests/rbac.test.ts). */
export const leanClientAccess: Record<keyof LeanKubeApi, Access> = {
  listNodePods: { group: "", resource: "pods", verb: "list" },
  watchNodePods: { group: "", resource: "pods", verb: "watch" },
  getPod: { group: "", resource: "pods", verb: "get" },
  deletePod: { group: "", resource: "pods", verb: "delete" },
  setPodCondition: { group: "", resource: "pods/status", verb: "patch" },
};

export interface PodWatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  object: Pod;
}

export interface LeanKubeApi {
  /** Every pod bound to `node` (field selector `spec.nodeName`), in all namespaces. */
  listNodePods(node: string): Promise<{ items: Pod[]; resourceVersion: string }>;
  /**
   * Watches the pods bound to `node` from `resourceVersion` until the server ends the watch
   * (after `timeoutSeconds`) or `signal` aborts; a 410 Gone rejects with a KubeError 410.
   */
  watchNodePods(
    p: { node: string; resourceVersion: string; timeoutSeconds: number; signal: AbortSignal },
    onEvent: (event: PodWatchEvent) => void,
  ): Promise<void>;
  getPod(p: { namespace: string; name: string }): Promise<Pod>;
  /** Deletes only the pod with this UID: a pod recreated under the same name is left alone. */
  deletePod(p: { namespace: string; name: string; uid: string }): Promise<void>;
  /**
   * Adds or replaces one condition of the pod's status (a strategic merge patch: conditions
   * merge by `type`, as the kubelet's), if the pod still has this UID.
   */
  setPodCondition(
    p: { namespace: string; name: string; uid: string; condition: Record<string, unknown> },
  ): Promise<void>;
}

/** Largest answer read whole (a node's pod list): a misbehaving server cannot exhaust memory. */
const maxBodyBytes = 32 * 2 ** 20;
/** A call that has not answered after this long fails as unreachable (the link may be dead). */
const requestTimeoutMs = 30_000;
/** TLS material files (a rotated kubelet certificate) are read again at most this often. */
const materialRecheckMs = 60_000;

type Agent = HttpAgent | HttpsAgent;

const strategicMerge = "application/strategic-merge-patch+json";

export class LeanKubeClient implements LeanKubeApi {
  readonly #connection: LeanConnection;
  readonly #https: boolean;
  #agent?: { material: string; checkedAt: number; agent: Agent };

  constructor(connection: LeanConnection) {
    this.#connection = connection;
    this.#https = connection.server.startsWith("https://");
  }

  async listNodePods(node: string) {
    const list = await this.#json<{ items?: Pod[]; metadata?: { resourceVersion?: string } }>(
      "GET",
      "/api/v1/pods",
      { fieldSelector: `spec.nodeName=${node}` },
      "list pods",
    );
    return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? "" };
  }

  async watchNodePods(
    p: { node: string; resourceVersion: string; timeoutSeconds: number; signal: AbortSignal },
    onEvent: (event: PodWatchEvent) => void,
  ): Promise<void> {
    const operation = "watch pods";
    const response = await this.#send(
      "GET",
      "/api/v1/pods",
      {
        fieldSelector: `spec.nodeName=${p.node}`,
        watch: "true",
        allowWatchBookmarks: "true",
        resourceVersion: p.resourceVersion,
        timeoutSeconds: String(p.timeoutSeconds),
      },
      operation,
      {
        signal: p.signal,
        // The server ends the watch after timeoutSeconds; silence well past that is a dead link.
        idleMs: (p.timeoutSeconds + 30) * 1000,
      },
    );
    if ((response.statusCode ?? 0) >= 300) await this.#fail(response, operation);
    // Decoded as a stream: a character split between two chunks stays whole.
    response.setEncoding("utf8");
    const lines = new JsonLines((value) => {
      const event = value as { type: string; object: Record<string, unknown> };
      if (event.type === "ERROR") {
        const status = event.object as { code?: number };
        throw toKubeError({ code: status.code ?? 500, body: event.object }, operation);
      }
      onEvent(event as PodWatchEvent);
    }, maxBodyBytes);
    for await (const chunk of response as AsyncIterable<string>) {
      try {
        lines.push(chunk);
      } catch (err) {
        throw err instanceof KubeError ? err : toKubeError(err, operation);
      }
    }
  }

  getPod(p: { namespace: string; name: string }): Promise<Pod> {
    return this.#json<Pod>("GET", podPath(p), {}, "get pod");
  }

  async deletePod(p: { namespace: string; name: string; uid: string }): Promise<void> {
    await this.#json("DELETE", podPath(p), {}, "delete pod", {
      kind: "DeleteOptions",
      apiVersion: "v1",
      preconditions: { uid: p.uid },
    });
  }

  async setPodCondition(
    p: { namespace: string; name: string; uid: string; condition: Record<string, unknown> },
  ): Promise<void> {
    const patch = { metadata: { uid: p.uid }, status: { conditions: [p.condition] } };
    await this.#json(
      "PATCH",
      `${podPath(p)}/status`,
      {},
      "patch pod status",
      patch,
      strategicMerge,
    );
  }

  /** Closes idle connections (on stop: a keep-alive socket would hold the process open). */
  close(): void {
    this.#agent?.agent.destroy();
    this.#agent = undefined;
  }

  async #json<T>(
    method: string,
    path: string,
    query: Record<string, string>,
    operation: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<T> {
    const response = await this.#send(method, path, query, operation, { body, contentType });
    if ((response.statusCode ?? 0) >= 300) await this.#fail(response, operation);
    return JSON.parse(await readBody(response, operation)) as T;
  }

  async #fail(response: IncomingMessage, operation: string): Promise<never> {
    const body = await readBody(response, operation).catch(() => "");
    throw toKubeError({
      code: response.statusCode,
      body,
      headers: { "retry-after": String(response.headers["retry-after"] ?? "") },
    }, operation);
  }

  #send(
    method: string,
    path: string,
    query: Record<string, string>,
    operation: string,
    options: { body?: unknown; contentType?: string; signal?: AbortSignal; idleMs?: number },
  ): Promise<IncomingMessage> {
    const url = new URL(`${this.#connection.server}${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": "edgeroll-edge",
    };
    if (payload !== undefined) {
      headers["content-type"] = options.contentType ?? "application/json";
      // Said, not left to the runtime: without it Deno's node:http sent a DELETE's body unread.
      headers["content-length"] = String(new TextEncoder().encode(payload).length);
    }
    const token = this.#connection.token && readSecret(this.#connection.token).trim();
    if (token) headers.authorization = `Bearer ${token}`;
    const send = this.#https ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      let req: ReturnType<typeof httpRequest>;
      try {
        req = send(url, {
          method,
          headers,
          agent: this.#currentAgent(),
          signal: options.signal,
          timeout: options.idleMs ?? requestTimeoutMs,
        }, (response) => {
          // A connection lost after the answer was read emits on a stream nobody reads any
          // more; while it is read, the reader gets the error.
          response.on("error", () => {});
          resolve(response);
        });
      } catch (err) {
        // TLS material that cannot be read or parsed: said, with the kubeconfig it came from.
        reject(toKubeError(err, `${operation} (${this.#connection.source})`));
        return;
      }
      req.on("timeout", () => req.destroy(new Error("no answer in time: the link may be down")));
      req.on("error", (err) => reject(toKubeError(err, operation)));
      req.end(payload);
    });
  }

  /** One keep-alive agent per TLS material; a new one when a file of it changed. */
  #currentAgent(): Agent {
    const now = Date.now();
    const held = this.#agent;
    if (held && now - held.checkedAt < materialRecheckMs) return held.agent;
    const c = this.#connection;
    const read = (secret?: LeanConnection["ca"]) => secret ? readSecret(secret) : undefined;
    const tls = { ca: read(c.ca), cert: read(c.cert), key: read(c.key) };
    const material = JSON.stringify(tls);
    if (held && held.material === material) {
      held.checkedAt = now;
      return held.agent;
    }
    held?.agent.destroy();
    const agent = this.#https
      ? new HttpsAgent({
        keepAlive: true,
        maxSockets: 4,
        ...tls,
        servername: c.tlsServerName,
        rejectUnauthorized: !c.insecureSkipTlsVerify,
      })
      : new HttpAgent({ keepAlive: true, maxSockets: 4 });
    this.#agent = { material, checkedAt: now, agent };
    return agent;
  }
}

function podPath(p: { namespace: string; name: string }): string {
  return `/api/v1/namespaces/${encodeURIComponent(p.namespace)}/pods/${encodeURIComponent(p.name)}`;
}

async function readBody(response: IncomingMessage, operation: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += chunk.length;
    if (size > maxBodyBytes) {
      response.destroy();
      throw toKubeError(new Error(`an answer larger than ${maxBodyBytes} bytes`), operation);
    }
    chunks.push(chunk);
  }
  return new TextDecoder().decode(concatBytes(chunks));
}
