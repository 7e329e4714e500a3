/**
 * Resolves with the first SIGINT or SIGTERM, for long-running commands that stop cleanly.
 * `node:process`, so the edge agent's Node executable stops the same way.
 */
import process from "node:process";

export type StopSignal = "SIGINT" | "SIGTERM";

export async function untilStopSignal(): Promise<StopSignal> {
  const stopped = Promise.withResolvers<StopSignal>();
  const onInterrupt = () => stopped.resolve("SIGINT");
  const onTerminate = () => stopped.resolve("SIGTERM");
  process.on("SIGINT", onInterrupt);
  process.on("SIGTERM", onTerminate);
  try {
    return await stopped.promise;
  } finally {
    process.off("SIGINT", onInterrupt);
    process.off("SIGTERM", onTerminate);
  }
}
