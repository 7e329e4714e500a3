/**
 * Fault injection (`PUT /sim/v1/faults`) and request statistics (`GET /sim/v1/stats`).
 *
 * A fault configuration is replaced whole by each PUT. Error rules match by verb and,
 * optionally, resource; the first matching rule whose dice roll hits answers the request
 * with its status code instead of serving it. Rolls come from a seeded generator so a test
 * can replay the same sequence of failures.
 */
import { z } from "zod";
import { ApiError } from "./status.ts";
import { seededRandom } from "./random.ts";

const VERBS = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
] as const;
export type Verb = typeof VERBS[number];

export const FaultsSchema = z.object({
  errors: z.array(
    z.object({
      verb: z.enum([...VERBS, "*"]).default("*"),
      /** Resource as in the URL (`pods`, `daemonsets`), or `*`. */
      resource: z.string().min(1).default("*"),
      code: z.union([
        z.literal(429),
        z.literal(500),
        z.literal(502),
        z.literal(503),
        z.literal(504),
      ]),
      rate: z.number().min(0).max(1),
    }).strict(),
  ).default([]),
  /** Added to every API request before it is served. */
  latencyMs: z.number().int().min(0).max(60_000).default(0),
  /** Every watch stream is cut after this many seconds (clients must resume). */
  watchDropSeconds: z.number().positive().optional(),
  /** Drops the watch history now: resuming from any older resourceVersion gets 410 Gone. */
  compact: z.boolean().default(false),
  /** Speed factor for the simulated cluster's behaviour (pull, start, heartbeat times). */
  speed: z.number().positive().max(10_000).optional(),
  /** Seed of the dice for error rules. */
  seed: z.number().int().default(1),
}).strict();

export type Faults = z.infer<typeof FaultsSchema>;

const REASONS: Record<number, ApiError["reason"]> = {
  429: "TooManyRequests",
  500: "InternalError",
  502: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export class FaultInjector {
  #faults: Faults = FaultsSchema.parse({});
  #random = seededRandom(1);

  get current(): Faults {
    return this.#faults;
  }

  set(faults: Faults): void {
    this.#faults = faults;
    this.#random = seededRandom(faults.seed);
  }

  /** The injected failure for this request, if the dice say so. */
  errorFor(verb: Verb, resource: string): ApiError | undefined {
    for (const rule of this.#faults.errors) {
      if (rule.verb !== "*" && rule.verb !== verb) continue;
      if (rule.resource !== "*" && rule.resource !== resource) continue;
      if (this.#random() >= rule.rate) continue;
      return new ApiError(
        rule.code,
        REASONS[rule.code],
        rule.code === 429
          ? "the server has received too many requests and has asked us to try again later (injected)"
          : `the server is currently unable to handle the request (injected ${rule.code})`,
        [],
        rule.code === 429 ? 1 : undefined,
      );
    }
    return undefined;
  }
}

/** Request counters by verb and resource. */
export class RequestStats {
  readonly byVerb: Record<string, number> = {};
  readonly byResource: Record<string, Record<string, number>> = {};

  count(verb: string, resource: string): void {
    this.byVerb[verb] = (this.byVerb[verb] ?? 0) + 1;
    const verbs = this.byResource[resource] ??= {};
    verbs[verb] = (verbs[verb] ?? 0) + 1;
  }
}
