/**
 * How sim calls the webhooks clusters register (CRD conversion, ADR 0028; admission): one POST of
 * a JSON review to a URL, over https checked against the registration's `caBundle` when it has
 * one, within a time limit and an answer size limit, as kube-apiserver's webhook client does. One
 * HTTP client per CA, closed when the server stops.
 */
import { boundedText } from "../lib/bytes.ts";

/**
 * The longest a conversion may take, answer read (and an admission webhook's default). kube-
 * apiserver allows conversions 30 s; sim calls webhooks on loopback only, where a healthy one
 * answers in milliseconds, and clients (client-go's 32 s watch timeouts, the e2e framework's
 * polls) should see the webhook's failure, not their own.
 */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * An answer may be four times the size of the review sent, and at least 3 MiB (kube-apiserver's
 * request body limit): converted or patched objects are about the size of the objects sent.
 */
const MIN_ANSWER_BYTES = 3 * 1024 * 1024;

/** Reads at most `limit` bytes of `response`'s body. */
async function limitedText(response: Response, limit: number): Promise<string> {
  const text = await boundedText(response, limit);
  if (text === undefined) throw new Error(`the answer is larger than ${limit} bytes`);
  return text;
}

export class WebhookClient {
  readonly #clients = new Map<string, Deno.HttpClient>();

  /**
   * POSTs `body` to `url` (with `?timeout=` as kube-apiserver adds it) and answers the reply's
   * text; fails with `Post "URL": why` (refused, untrusted, no answer in time, not 2xx).
   */
  async post(
    url: string,
    caPem: string | undefined,
    body: string,
    timeoutMs = WEBHOOK_TIMEOUT_MS,
  ): Promise<string> {
    const target = new URL(url);
    target.searchParams.set("timeout", `${Math.ceil(timeoutMs / 1000)}s`);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      const response = await fetch(target, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        signal: abort.signal,
        client: caPem === undefined ? undefined : this.#client(caPem),
      });
      const text = await limitedText(response, Math.max(MIN_ANSWER_BYTES, 4 * body.length));
      if (!response.ok) {
        throw new Error(`the server answered ${response.status}: ${text.slice(0, 200)}`);
      }
      return text;
    } catch (err) {
      // fetch's own message is "fetch failed"; what failed (refused, untrusted) is its cause.
      const cause = (err as Error).cause;
      const why = abort.signal.aborted
        ? `no answer within ${Math.ceil(timeoutMs / 1000)}s`
        : cause instanceof Error
        ? cause.message
        : (err as Error).message;
      throw new Error(`Post "${target}": ${why}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the HTTP clients (the server stops). */
  close(): void {
    for (const client of this.#clients.values()) client.close();
    this.#clients.clear();
  }

  #client(caPem: string): Deno.HttpClient {
    let client = this.#clients.get(caPem);
    if (!client) this.#clients.set(caPem, client = Deno.createHttpClient({ caCerts: [caPem] }));
    return client;
  }
}
