/**
 * Bearer tokens on the routes that change things. In-cluster, a ServiceAccount token is
 * checked with a TokenReview and its user must be on an allowed list; on the edge and in
 * development, a static token. No token or an unknown one: 401; a known user who is not
 * allowed: 403.
 */
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./errors.ts";
import { RecentMap } from "../lib/recent-map.ts";

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
  /** How long a rejected token is answered 401 without asking again (default 10 s). */
  rejectedCacheSeconds?: number;
  /**
   * TokenReviews sent per second at most, whoever calls (default 10, a burst of as many): the
   * calls past it answer 429, so no caller can drive load onto the API server.
   */
  reviewsPerSecond?: number;
  clock?: () => number;
}

/** Reviews remembered, each way: a flood of bad tokens cannot push out the good ones. */
const maxRemembered = 1000;
const maxRejectedRemembered = 10_000;

/** A `RecentMap` whose entries also expire. */
class ExpiringMap<V> {
  readonly #entries: RecentMap<string, { value: V; expires: number }>;
  constructor(max: number, readonly clock: () => number) {
    this.#entries = new RecentMap(max);
  }

  get(key: string): V | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    if (hit.expires > this.clock()) return hit.value;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#entries.set(key, { value, expires: this.clock() + ttlMs });
  }
}

/** What a TokenReview answers, as far as authentication reads it. */
export interface TokenReviewAnswer {
  authenticated: boolean;
  username?: string;
  groups?: string[];
  /** The audiences the token is valid for, among those the review asked about. */
  audiences?: string[];
  error?: string;
}

/** Who reviews tokens: the controller's Kubernetes client (`KubeClient.reviewToken`). */
export interface TokenReviewer {
  reviewToken(token: string, audiences?: string[]): Promise<TokenReviewAnswer>;
}

/** Checks tokens with the API server's TokenReview. */
export function tokenReviewAuthenticator(
  reviewer: TokenReviewer,
  options: TokenReviewOptions,
): Authenticator {
  if (options.allowed.length === 0) {
    throw new Error("TokenReview auth needs at least one allowed subject");
  }
  const clock = options.clock ?? Date.now;
  const ttl = (options.cacheSeconds ?? 60) * 1000;
  const rejectedTtl = (options.rejectedCacheSeconds ?? 10) * 1000;
  const accepted = new ExpiringMap<Identity>(maxRemembered, clock);
  const rejected = new ExpiringMap<Identity>(maxRejectedRemembered, clock);
  /** Reviews under way, by token digest: concurrent calls with one token wait for one review. */
  const inFlight = new Map<string, Promise<Identity>>();
  const rate = Math.max(1, options.reviewsPerSecond ?? 10);
  const bucket = { tokens: rate, at: clock() };
  const takeReview = () => {
    const now = clock();
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  };
  const review = async (token: string): Promise<Identity> => {
    const result = await reviewer.reviewToken(token, options.audiences);
    // An API server that ignores audiences answers without them: that is not a match.
    const audienceMatched = !options.audiences?.length ||
      (result.audiences ?? []).some((a) => options.audiences!.includes(a));
    return result.authenticated && result.username && audienceMatched
      ? { authenticated: true, username: result.username, groups: result.groups ?? [] }
      : {
        authenticated: false,
        why: result.error ||
          (result.authenticated
            ? `the token is not meant for ${options.audiences!.join(", ")}`
            : "TokenReview did not authenticate the token"),
      };
  };
  return {
    mode: "tokenreview",
    async authenticate(token) {
      const key = Array.from(await sha256(token), (b) => b.toString(16).padStart(2, "0")).join("");
      const known = accepted.get(key) ?? rejected.get(key);
      if (known) return known;
      const pending = inFlight.get(key);
      if (pending) return await pending;
      if (!takeReview()) {
        throw new HttpError(
          429,
          "TooManyRequests",
          `more than ${rate} tokens a second to review: try again`,
          { retryable: true },
        );
      }
      const reviewing = review(token).then((identity) => {
        if (identity.authenticated) accepted.set(key, identity, ttl);
        else rejected.set(key, identity, rejectedTtl);
        return identity;
      }).finally(() => inFlight.delete(key));
      inFlight.set(key, reviewing);
      return await reviewing;
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
    const identity = await auth.authenticate(match[1]).catch((err) => {
      if (err instanceof HttpError && err.status === 429) c.header("Retry-After", "1");
      throw err;
    });
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

/**
 * No token asked: the edge agent's OTA routes when it listens on loopback only and no token was
 * given, as YurtHub's are on 127.0.0.1:10267 (docs/auth.md says who can reach them there).
 */
export const openOnLoopback: MiddlewareHandler = async (_c, next) => {
  await next();
};
