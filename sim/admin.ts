/**
 * The simulator's `/sim/v1` admin API, outside Kubernetes' own: faults (and compaction) read
 * and set, request and store stats, and node verbs (disconnect, reconnect, ...) passed to the
 * cluster's behaviour.
 */
import { ApiError } from "./status.ts";
import { FaultsSchema } from "./faults.ts";
import { NODE_ACTIONS } from "./behaviour.ts";
import type { ServerContext } from "./context.ts";
import { json, notFound } from "./http.ts";
import { closeWatches, type Watches } from "./watch.ts";

export async function serveAdmin(
  ctx: ServerContext,
  watches: Watches,
  req: Request,
  path: string,
): Promise<Response> {
  const { store, faults, stats } = ctx;
  if (path === "/sim/v1/faults" && req.method === "GET") return json(faults.current);
  if (path === "/sim/v1/faults" && req.method === "PUT") {
    let body: unknown;
    try {
      body = JSON.parse(await req.text());
    } catch {
      return json({ error: "the body is not valid JSON", issues: [] }, 400);
    }
    const parsed = FaultsSchema.safeParse(body);
    if (!parsed.success) {
      return json({ error: "invalid faults", issues: parsed.error.issues }, 400);
    }
    faults.set(parsed.data);
    if (parsed.data.speed !== undefined) ctx.behaviour().setSpeed?.(parsed.data.speed);
    if (parsed.data.compact) {
      // Every watcher must come back, and finds its resourceVersion gone.
      store.compact();
      closeWatches(watches);
    }
    return json(parsed.data);
  }
  if (path === "/sim/v1/stats" && req.method === "GET") {
    const objects: Record<string, number> = {};
    for (const resource of store.resources()) objects[resource] = store.count(resource);
    return json({
      requests: { byVerb: stats.byVerb, byResource: stats.byResource },
      writes: store.writes,
      watches: watches.open.size,
      objects: { total: store.count(), byResource: objects },
      resourceVersion: String(store.resourceVersion),
    });
  }
  const m = /^\/sim\/v1\/nodes\/([^/]+)\/([a-z]+)$/.exec(path);
  if (m && req.method === "POST" && m[2] in NODE_ACTIONS) {
    const node = decodeURIComponent(m[1]);
    store.get("nodes", undefined, node);
    const method = NODE_ACTIONS[m[2] as keyof typeof NODE_ACTIONS];
    const behaviour = ctx.behaviour();
    const action = behaviour[method] as ((node: string) => void) | undefined;
    if (!action) {
      throw new ApiError(
        503,
        "ServiceUnavailable",
        `the simulated cluster does not support ${m[2]}`,
      );
    }
    action.call(behaviour, node);
    if (m[2] === "disconnect" || m[2] === "reconnect") await ctx.onNodeLink?.(node, m[2]);
    return json({ node, action: m[2] });
  }
  throw notFound();
}
