/**
 * A bound on how long one Kubernetes call may take: a node cut off from the cloud may get no
 * answer at all rather than a refused connection. Past it the call fails as unreachable (a
 * `KubeError` of status 0); the call itself is not cancelled, its late result is dropped.
 */
import { toKubeError } from "./errors.ts";

export async function answeredWithin<T>(
  work: Promise<T>,
  ms: number,
  operation: string,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(toKubeError(new Error(`no answer within ${ms / 1000} s`), operation)),
      ms,
    );
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
