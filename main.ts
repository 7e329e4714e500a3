/**
 * edgeroll's command line: one entry, one subcommand per job.
 *
 * Each room exports its own `Command`; this file only dispatches.
 */
import { type Command, runCommand } from "./lib/command.ts";

/**
 * Each command's module, loaded only when it runs: `serve` started cold (a scale-from-zero call,
 * a restarted replica) loads its own graph and not the simulator's, the dashboard's or the
 * cluster tools' (`serve --help` 0.5 s and 136 MiB where it took 0.85 s and 141). The overview
 * loads them all.
 */
const commands: Record<string, () => Promise<Command>> = {
  crd: () => import("./cli/crd-command.ts").then((m) => m.crdCommand),
  openapi: () => import("./cli/openapi-command.ts").then((m) => m.openApiCommand),
  demo: () => import("./cli/demo.ts").then((m) => m.demoCommand),
  sim: () => import("./sim/command.ts").then((m) => m.simCommand),
  serve: () => import("./cli/serve.ts").then((m) => m.serveCommand),
  relay: () => import("./relay/relay-command.ts").then((m) => m.relayCommand),
  edge: () => import("./edge/command.ts").then((m) => m.edgeCommand),
  reconcile: () => import("./cli/reconcile-command.ts").then((m) => m.reconcileCommand),
  status: () => import("./cli/status-command.ts").then((m) => m.statusCommand),
  history: () => import("./cli/rollout-commands.ts").then((m) => m.historyCommand),
  undo: () => import("./cli/rollout-commands.ts").then((m) => m.undoCommand),
  pause: () => import("./cli/rollout-commands.ts").then((m) => m.pauseCommand),
  resume: () => import("./cli/rollout-commands.ts").then((m) => m.resumeCommand),
  approve: () => import("./cli/rollout-commands.ts").then((m) => m.approveCommand),
  promote: () => import("./cli/rollout-commands.ts").then((m) => m.promoteCommand),
  abort: () => import("./cli/rollout-commands.ts").then((m) => m.abortCommand),
  dashboard: () => import("./cli/dashboard/command.ts").then((m) => m.dashboardCommand),
  "cluster-up": () => import("./cluster/command.ts").then((m) => m.clusterUpCommand),
  "cluster-down": () => import("./cluster/command.ts").then((m) => m.clusterDownCommand),
  "cluster-node": () => import("./cluster/command.ts").then((m) => m.clusterNodeCommand),
};

/** Every command, loaded, in the overview's order. */
export function allCommands(): Promise<Command[]> {
  return Promise.all(Object.values(commands).map((load) => load()));
}

async function overview(): Promise<string> {
  const loaded = await allCommands();
  const width = Math.max(8, ...loaded.map((c) => c.name.length)) + 2;
  return [
    "usage: edgeroll <command> [options]",
    "",
    "edgeroll rolls DaemonSets out across edge fleets in budgeted waves.",
    "",
    "commands:",
    ...loaded.map((c) => `  ${c.name.padEnd(width)}${c.summary.split("\n")[0]}`),
    "",
    "Run `edgeroll <command> --help` for the options of one command.",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv[0] === "--" ? argv.slice(1) : argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(await overview());
    return name === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    console.error(`edgeroll: unknown command "${name}"\n\n${await overview()}`);
    return 2;
  }
  return await runCommand(await load(), rest);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
