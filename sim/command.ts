/**
 * `edgeroll sim`: runs the simulator until SIGINT/SIGTERM.
 */
import {
  type Command,
  intOption,
  type ParsedArgs,
  stringOption,
  UsageError,
} from "../lib/command.ts";
import { untilStopSignal } from "../lib/signals.ts";
import { startSim } from "./start.ts";

/** A positive number of `name`, or undefined when not given. */
function positiveOption(args: ParsedArgs, name: string): number | undefined {
  const raw = stringOption(args, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  }
  return value;
}

const withValue = <K extends string>(key: K, value: number | undefined) =>
  value === undefined ? {} : { [key]: value } as Record<K, number>;

export const simCommand: Command = {
  name: "sim",
  summary: "Run the Kubernetes API simulator with simulated edge nodes until interrupted.",
  usage:
    "[--nodes N] [--zones K] [--port P] [--speed X] [--pull-seconds S] [--start-seconds S] [--kubeconfig PATH]",
  options: {
    nodes: { type: "string" },
    zones: { type: "string" },
    port: { type: "string" },
    speed: { type: "string" },
    "pull-seconds": { type: "string" },
    "start-seconds": { type: "string" },
    kubeconfig: { type: "string" },
  },
  help: {
    nodes: "simulated nodes edge-1…edge-N (default 3)",
    zones: "spread the nodes over K zones (default 1)",
    port: "port on 127.0.0.1 (default 0: a free one)",
    speed: "speed factor for pull, start and heartbeat times (default 1)",
    "pull-seconds": "simulated seconds an image pull takes (default 8)",
    "start-seconds": "simulated seconds a container takes to start from a cached image (default 1)",
    kubeconfig: "write a kubeconfig for kubectl here (default a temporary file)",
  },
  async run(args) {
    const sim = await startSim({
      nodes: intOption(args, "nodes", 3, { min: 0, max: 100_000 }),
      zones: intOption(args, "zones", 1, { min: 1, max: 1000 }),
      port: intOption(args, "port", 0, { min: 0, max: 65535 }),
      speed: positiveOption(args, "speed") ?? 1,
      durations: {
        ...withValue("pullSeconds", positiveOption(args, "pull-seconds")),
        ...withValue("cachedStartSeconds", positiveOption(args, "start-seconds")),
      },
      kubeconfigPath: stringOption(args, "kubeconfig"),
    });
    try {
      console.log(`sim ready on ${sim.url}`);
      console.log(
        JSON.stringify({ level: "info", msg: "sim kubeconfig", path: sim.kubeconfigPath }),
      );
      const signal = await untilStopSignal();
      console.log(JSON.stringify({ level: "info", msg: "sim stopping", signal }));
    } finally {
      await sim.stop();
    }
    return 0;
  },
};
