/**
 * A bound on how long one awaited call may take: a node cut off from the cloud may get no
 * answer at all rather than a refused connection. The call itself is not cancelled; its late
 * result is dropped.
 */
export async function withinDeadline<T>(
  work: Promise<T>,
  ms: number,
  late: () => Error,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
