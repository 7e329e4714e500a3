/**
 * The one polling wait: asks `probe` until it answers something other than undefined or
 * false, and fails naming `what` once `timeoutMs` has passed. The bound keeps a broken wait
 * from hanging; it is never what a test asserts (timing goals live in bench/).
 */
export interface EventuallyOptions {
  /** Default 20 s. */
  timeoutMs?: number;
  /** Between two asks; default 25 ms. */
  intervalMs?: number;
  /** Ask again when the probe throws (a server still starting); default: the error fails. */
  retryErrors?: boolean;
}

export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 20_000, intervalMs = 25, retryErrors = false }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${lastError}` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
