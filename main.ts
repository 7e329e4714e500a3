/**
 * edgeroll's command line: one entry, one subcommand per job.
 *
 * Each room exports its own `Command`; this file only dispatches.
 */
import { type Command, runCommand } from "./lib/command.ts";
import { crdCommand } from "./cli/crd-command.ts";
import { openApiCommand } from "./cli/openapi-command.ts";
import { dashboardCommand } from "./cli/dashboard/command.ts";
import { simCommand } from "./sim/command.ts";
import { demoCommand } from "./cli/demo.ts";
import { serveCommand } from "./cli/serve.ts";
import { edgeCommand } from "./edge/command.ts";
import { reconcileCommand } from "./cli/reconcile-command.ts";
import { statusCommand } from "./cli/status-command.ts";
import {
  historyCommand,
  pauseCommand,
  resumeCommand,
  undoCommand,
} from "./cli/rollout-commands.ts";
import { relayCommand } from "./relay/relay-command.ts";
import { clusterDownCommand, clusterNodeCommand, clusterUpCommand } from "./cluster/command.ts";

const commands: Command[] = [
  crdCommand,
  openApiCommand,
  demoCommand,
  simCommand,
  serveCommand,
  relayCommand,
  edgeCommand,
  reconcileCommand,
  statusCommand,
  historyCommand,
  undoCommand,
  pauseCommand,
  resumeCommand,
  dashboardCommand,
  clusterUpCommand,
  clusterDownCommand,
  clusterNodeCommand,
];

function overview(): string {
  const width = Math.max(8, ...commands.map((c) => c.name.length)) + 2;
  return [
    "usage: edgeroll <command> [options]",
    "",
    "edgeroll rolls DaemonSets out across edge fleets in budgeted waves.",
    "",
    "commands:",
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary.split("\n")[0]}`),
    "",
    "Run `edgeroll <command> --help` for the options of one command.",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv[0] === "--" ? argv.slice(1) : argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(overview());
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    console.error(`edgeroll: unknown command "${name}"\n\n${overview()}`);
    return 2;
  }
  return await runCommand(command, rest);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
