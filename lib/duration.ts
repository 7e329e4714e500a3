/** Durations as people write them on command lines: `500ms`, `30s`, `5m`, `1h`. */
import { UsageError } from "./command.ts";

const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of `text`; a bare number means seconds. */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) {
    throw new UsageError(`--${flag}: "${text}" is not a duration (e.g. 500ms, 30s, 5m, 1h)`);
  }
  const ms = Number(match[1]) * unitMs[match[2] ?? "s"];
  if (ms <= 0) throw new UsageError(`--${flag}: must be more than zero`);
  return ms;
}
