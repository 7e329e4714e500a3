/**
 * The shape every subcommand of `main.ts` has, and the one argument parser they share.
 *
 * Runtime-neutral on purpose (`node:util` only): the edge agent's single executable runs
 * the same parser under Node.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

export interface Command {
  name: string;
  summary: string;
  /** Usage line after `edgeroll <name>`, e.g. `[--nodes N] [--port P]`. */
  usage: string;
  options: OptionSpec;
  /** One line per option, for `--help`. */
  help: Record<string, string>;
  run(args: ParsedArgs): Promise<number>;
}

export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

/** A bad command line: printed without a stack trace, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Parses `argv` for `command`. A leading `--` is dropped: `deno task sim -- --nodes 5`
 * passes it through to us.
 */
export function parseCommandArgs(command: Command, argv: string[]): ParsedArgs {
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...command.options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
    return { values, positionals };
  } catch (err) {
    throw new UsageError(`${command.name}: ${(err as Error).message}`);
  }
}

export function commandHelp(command: Command): string {
  const lines = [`usage: edgeroll ${command.name} ${command.usage}`.trimEnd(), "", command.summary];
  const names = Object.keys(command.help);
  if (names.length > 0) {
    lines.push("", "options:");
    const width = Math.max(...names.map((n) => n.length)) + 4;
    for (const name of names) lines.push(`  --${name.padEnd(width)}${command.help[name]}`);
  }
  return lines.join("\n");
}

/**
 * Parses `argv` and runs `command`: its exit code; 2 with the help for a bad command line, 1
 * with the message for any other failure.
 */
export async function runCommand(command: Command, argv: string[]): Promise<number> {
  try {
    const args = parseCommandArgs(command, argv);
    if (args.values.help) {
      console.log(commandHelp(command));
      return 0;
    }
    return await command.run(args);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`edgeroll ${command.name}: ${err.message}\n\n${commandHelp(command)}`);
      return 2;
    }
    console.error(`edgeroll ${command.name}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

/** Reads an integer option, rejecting anything that is not a whole number in range. */
export function intOption(
  args: ParsedArgs,
  name: string,
  fallback: number,
  range: { min?: number; max?: number } = {},
): number {
  const raw = args.values[name];
  if (raw === undefined) return fallback;
  const text = String(raw);
  if (!/^-?\d+$/.test(text)) {
    throw new UsageError(`--${name} must be a whole number, got "${text}"`);
  }
  const value = Number(text);
  if (range.min !== undefined && value < range.min) {
    throw new UsageError(`--${name} must be at least ${range.min}, got ${value}`);
  }
  if (range.max !== undefined && value > range.max) {
    throw new UsageError(`--${name} must be at most ${range.max}, got ${value}`);
  }
  return value;
}

export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const raw = args.values[name];
  return raw === undefined ? undefined : String(raw);
}
