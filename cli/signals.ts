/** Resolves with the first SIGINT or SIGTERM, for long-running commands that stop cleanly. */
export async function untilStopSignal(): Promise<Deno.Signal> {
  const stopped = Promise.withResolvers<Deno.Signal>();
  const onInterrupt = () => stopped.resolve("SIGINT");
  const onTerminate = () => stopped.resolve("SIGTERM");
  Deno.addSignalListener("SIGINT", onInterrupt);
  Deno.addSignalListener("SIGTERM", onTerminate);
  try {
    return await stopped.promise;
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
    Deno.removeSignalListener("SIGTERM", onTerminate);
  }
}
