/** Helpers for cluster/'s own tests. */
import { isAlive, sleep } from "./processes.ts";

/** A spawned child runs the spawner's binary for a moment, until it has exec'd its own. */
export async function untilExeced(pid: number, binary: string): Promise<void> {
  for (let i = 0; i < 100 && !(await isAlive({ pid, binary })); i++) await sleep(20);
}
