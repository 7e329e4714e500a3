/**
 * Bearer tokens on the routes that change things. In-cluster, a ServiceAccount token is
 * checked with a TokenReview and its user must be on an allowed list; on the edge and in
 * development, a static token. No token or an unknown one: 401; a known user who is not
 * allowed: 403.
 */
import type { MiddlewareHandler } from "hono";
import type { KubeClient } from "../kube/client.ts";
import { HttpError } from "./errors.ts";

export type Identity =
  | { authenticated: false; why: string }
  | { authenticated: true; username: string; groups: string[] };

export interface Authenticator {
  /** Names the mode in logs and errors: `static` or `tokenreview`. */
  readonly mode: string;
  authenticate(token: string): Promise<Identity>;
  /** Whether this user may call mutating routes. */
  allows(identity: Identity & { authenticated: true }): boolean;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Compares digests, never the tokens, so the time taken tells nothing about the token. */
function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** One shared secret, e.g. from `--token-file` or `EDGEROLL_TOKEN`. */
export function staticTokenAuthenticator(token: string): Authenticator {
  if (token.trim() === "") throw new Error("the static token is empty");
  const expected = sha256(token.trim());
  return {
    mode: "static",
    async authenticate(presented) {
      return sameDigest(await sha256(presented), await expected)
        ? { authenticated: true, username: "edgeroll:static-token", groups: [] }
        : { authenticated: false, why: "token does not match" };
    },
    allows: () => true,
  };
}

export interface TokenReviewOptions {
  /** Usernames (`system:serviceaccount:ns:name`) or `group:NAME` entries allowed to call. */
  allowed: string[];
  audiences?: string[];
  /** How long a positive review is reused, so a burst of events costs one TokenReview. */
  cacheSeconds?: number;
  clock?: () => number;
}

/** Checks tokens with the API server's TokenReview. */
export function tokenReviewAuthenticator(
  kube: KubeClient,
  options: TokenReviewOptions,
): Authenticator {
  if (options.allowed.length === 0) {
    throw new Error("TokenReview auth needs at least one allowed subject");
  }
  const clock = options.clock ?? Date.now;
  const ttl = (options.cacheSeconds ?? 60) * 1000;
  const cache = new Map<string, { identity: Identity; expires: number }>();
  const maxCached = 1000;
  return {
    mode: "tokenreview",
    async authenticate(token) {
      const key = Array.from(await sha256(token), (b) => b.toString(16).padStart(2, "0")).join("");
      const hit = cache.get(key);
      if (hit && hit.expires > clock()) return hit.identity;
      const review = await kube.reviewToken(token, options.audiences);
      // An API server that ignores audiences answers without them: that is not a match.
      const audienceMatched = !options.audiences?.length ||
        (review.audiences ?? []).some((a) => options.audiences!.includes(a));
      const identity: Identity = review.authenticated && review.username && audienceMatched
        ? { authenticated: true, username: review.username, groups: review.groups ?? [] }
        : {
          authenticated: false,
          why: review.error ||
            (review.authenticated
              ? `the token is not meant for ${options.audiences!.join(", ")}`
              : "TokenReview did not authenticate the token"),
        };
      if (identity.authenticated) {
        if (cache.size >= maxCached) cache.delete(cache.keys().next().value!);
        cache.set(key, { identity, expires: clock() + ttl });
      }
      return identity;
    },
    allows({ username, groups }) {
      return options.allowed.some((entry) =>
        entry.startsWith("group:") ? groups.includes(entry.slice(6)) : entry === username
      );
    },
  };
}

/** Middleware for mutating routes. */
export function requireBearer(auth: Authenticator): MiddlewareHandler {
  return async (c, next) => {
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      c.header("WWW-Authenticate", 'Bearer realm="edgeroll"');
      throw new HttpError(401, "Unauthorized", "a bearer token is required");
    }
    const identity = await auth.authenticate(match[1]);
    if (!identity.authenticated) {
      c.header("WWW-Authenticate", 'Bearer realm="edgeroll", error="invalid_token"');
      throw new HttpError(401, "Unauthorized", `token rejected (${auth.mode}): ${identity.why}`);
    }
    if (!auth.allows(identity)) {
      throw new HttpError(
        403,
        "Forbidden",
        `${identity.username} is not allowed to call this route`,
      );
    }
    await next();
  };
}
