/**
 * `edgeroll demo`, interim: until the controller exists, the demo starts the simulated
 * cluster with a small fleet and prints what it holds. It does nothing more, and says so.
 */
import { type Command, intOption } from "../cli/command.ts";
import { startSim } from "./start.ts";
import { untilSignal } from "./command.ts";

export const demoCommand: Command = {
  name: "demo",
  summary:
    "Start the simulated cluster with a small edge fleet and print what it holds (the rollout demo arrives with the controller).",
  usage: "[--nodes N] [--zones K] [--serve]",
  options: {
    nodes: { type: "string" },
    zones: { type: "string" },
    serve: { type: "boolean" },
  },
  help: {
    nodes: "simulated nodes (default 6)",
    zones: "zones (default 2)",
    serve: "keep the simulator running for kubectl until Ctrl-C",
  },
  async run(args) {
    const nodes = intOption(args, "nodes", 6, { min: 1, max: 10_000 });
    const zones = intOption(args, "zones", 2, { min: 1, max: 100 });
    const sim = await startSim({ nodes, zones });
    try {
      console.log(`sim ready on ${sim.url}`);
      const byZone = new Map<string, string[]>();
      for (const node of sim.store.scan("nodes")) {
        const zone = node.metadata.labels?.["topology.kubernetes.io/zone"] ?? "<none>";
        byZone.set(zone, [...(byZone.get(zone) ?? []), node.metadata.name]);
      }
      console.log(`\nnodes (${sim.store.count("nodes")}):`);
      for (const [zone, names] of byZone) console.log(`  ${zone}: ${names.join(", ")}`);
      const namespaces = sim.store.scan("namespaces").map((n) => n.metadata.name);
      console.log(`namespaces: ${namespaces.join(", ")}`);
      console.log(`objects held: ${sim.store.count()}`);
      console.log(
        "\nThe rollout controller is not built yet: this demo only shows the simulated cluster.",
      );
      if (args.values.serve) {
        console.log(`kubectl --kubeconfig ${sim.kubeconfigPath} get nodes   (Ctrl-C to stop)`);
        await untilSignal();
      }
    } finally {
      await sim.stop();
    }
    return 0;
  },
};
