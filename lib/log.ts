/**
 * JSON-lines logging: one object a line on stderr, with the fields of the logger it came
 * from (e.g. the set's key), so `jq` can follow one set through many requests.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  with(fields: LogFields): Logger;
}

const order: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface LoggerOptions {
  level?: LogLevel;
  /** Where lines go; stderr by default. */
  write?: (line: string) => void;
  clock?: () => number;
}

export function createLogger(options: LoggerOptions = {}, base: LogFields = {}): Logger {
  const min = order[options.level ?? "info"];
  const write = options.write ?? ((line: string) => console.error(line));
  const clock = options.clock ?? Date.now;
  const emit = (level: LogLevel) => (msg: string, fields: LogFields = {}) => {
    if (order[level] < min) return;
    write(JSON.stringify({ ts: new Date(clock()).toISOString(), level, msg, ...base, ...fields }));
  };
  return {
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    with: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

/** A logger that keeps its lines, for tests that assert on what was logged. */
export function memoryLogger(): Logger & { lines: LogFields[] } {
  const lines: LogFields[] = [];
  const logger = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line)) });
  return Object.assign(logger, { lines });
}
