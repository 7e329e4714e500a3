/**
 * Bounded retries with exponential backoff for calls that fail with a retryable
 * `KubeError` (429, 5xx, no answer). Terminal errors go straight back to the caller.
 */
import { type KubeError, toKubeError } from "./errors.ts";

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number;
  /** Wait before the second try; doubled each time, capped at `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Injected so tests do not wait; defaults to a real timer. */
  sleep?: (ms: number) => Promise<void>;
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 4, baseDelayMs: 100, maxDelayMs: 2000 };

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The wait before try number `attempt + 1`, honouring a server's `Retry-After`. */
export function backoffDelay(policy: RetryPolicy, attempt: number, err: KubeError): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const asked = err.retryAfterSeconds === undefined ? 0 : err.retryAfterSeconds * 1000;
  return Math.min(policy.maxDelayMs, Math.max(exponential, asked));
}

export async function withRetry<T>(
  operation: string,
  call: () => Promise<T>,
  policy: RetryPolicy = defaultRetryPolicy,
): Promise<T> {
  const sleep = policy.sleep ?? realSleep;
  for (let attempt = 1;; attempt++) {
    try {
      return await call();
    } catch (thrown) {
      const err = toKubeError(thrown, operation);
      if (err.terminal || attempt >= policy.attempts) throw err;
      await sleep(backoffDelay(policy, attempt, err));
    }
  }
}
