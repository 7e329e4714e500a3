/**
 * `edgeroll cluster-up`, `cluster-down` and `cluster-node VERB NODE`: the real control plane
 * for tests and people. `cluster-up` leaves the cluster running and exits; `cluster-down`
 * stops it. (Separate commands, not one with an action word, so that `deno task cluster:up --
 * --nodes 3` puts the `--` first, where the shared parser drops it.)
 */
import { type Command, intOption, stringOption, UsageError } from "../lib/command.ts";
import { downCluster, readState, upCluster } from "./control-plane.ts";
import { type NodeLinkVerb, nodeLinkVerbs, setNodeLink } from "./node-link.ts";
import { residentKiB } from "./processes.ts";

function logLine(event: Record<string, unknown>): void {
  console.log(JSON.stringify({ time: new Date().toISOString(), ...event }));
}

function noPositionals(positionals: string[]): void {
  if (positionals.length > 0) {
    throw new UsageError(`unexpected arguments: ${positionals.join(" ")}`);
  }
}

export const clusterUpCommand: Command = {
  name: "cluster-up",
  summary: "Start the real control plane (etcd, apiserver, controllers, kwok nodes edge-1…N).\n" +
    "Needs cluster/bin from cluster/build.sh (`deno task cluster:up` runs it first). A cluster\n" +
    "left by an earlier run is stopped first.",
  usage: "[--nodes N] [--kubeconfig PATH]",
  options: { nodes: { type: "string" }, kubeconfig: { type: "string" } },
  help: {
    nodes: "fake nodes edge-1…edge-N to create (default 3)",
    kubeconfig: "where to write the admin kubeconfig (default: in the cluster's temp dir)",
  },
  async run(args) {
    noPositionals(args.positionals);
    const started = performance.now();
    const state = await upCluster({
      nodes: intOption(args, "nodes", 3, { min: 1, max: 5000 }),
      kubeconfigPath: stringOption(args, "kubeconfig"),
      log: logLine,
    });
    logLine({
      msg: "cluster ready",
      kubeconfig: state.kubeconfigPath,
      server: state.server,
      nodes: state.nodes.length,
      seconds: Math.round((performance.now() - started) / 100) / 10,
      rssMiB: Object.fromEntries(
        await Promise.all(
          state.processes.map(async (
            p,
          ) => [p.name, Math.round((await residentKiB(p.pid) ?? 0) / 1024)]),
        ),
      ),
    });
    return 0;
  },
};

export const clusterDownCommand: Command = {
  name: "cluster-down",
  summary: "Stop the control plane that cluster-up started and remove its temporary data.",
  usage: "",
  options: {},
  help: {},
  async run(args) {
    noPositionals(args.positionals);
    logLine({ msg: (await downCluster()) ? "cluster stopped" : "no cluster was running" });
    return 0;
  },
};

export const clusterNodeCommand: Command = {
  name: "cluster-node",
  summary: "Cut or heal a fake node's link on the running cluster, like sim's admin API:\n" +
    "disconnect | reconnect (Lease and heartbeats stop / resume), notready | ready (kubelet\n" +
    "reports Ready=False / True).",
  usage: `${nodeLinkVerbs.join("|")} NODE`,
  options: {},
  help: {},
  async run(args) {
    const [verb, node, ...extra] = args.positionals;
    noPositionals(extra);
    if (!nodeLinkVerbs.includes(verb as NodeLinkVerb)) {
      throw new UsageError(
        `the verb must be one of ${nodeLinkVerbs.join(", ")}, got "${verb ?? ""}"`,
      );
    }
    if (node === undefined) throw new UsageError(`${verb} needs a node name`);
    const state = await readState();
    if (!state) throw new Error("no cluster is running: run `deno task cluster:up` first");
    await setNodeLink(state.kubeconfigPath, node, verb as NodeLinkVerb);
    logLine({ msg: verb, node });
    return 0;
  },
};
