/**
 * `edgeroll edge`: the edge agent as a command, for `main.ts` and for the Node single
 * executable (`edge/node-main.ts`) alike; `node:` built-ins only, no `Deno.*`.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { type Command, intOption, stringOption, UsageError } from "../lib/command.ts";
import { untilStopSignal } from "../lib/signals.ts";
import { kubeconfigHelp, loadLeanConnection } from "../kube/lean-config.ts";
import { defaultEdgePort, defaultStateDir, startEdgeAgent } from "./agent.ts";

export const edgeCommand: Command = {
  name: "edge",
  summary:
    "Run the edge agent: OpenYurt's OTA API (GET /pods, upgrade) for one node, on loopback, from a cache that outlives the link.",
  usage: `--node NAME [--kubeconfig PATH] [--port ${defaultEdgePort}] [--host 127.0.0.1] ` +
    `[--state-dir ${defaultStateDir}] [--token-file F] [--require-token]`,
  options: {
    node: { type: "string" },
    kubeconfig: { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "state-dir": { type: "string" },
    "token-file": { type: "string" },
    "require-token": { type: "boolean" },
  },
  help: {
    node: "the node this agent serves: only its pods are listed and upgraded",
    kubeconfig: kubeconfigHelp,
    port: `port to listen on (default ${defaultEdgePort}, as YurtHub)`,
    host: "address to listen on (default 127.0.0.1; any other address needs a token)",
    "state-dir":
      `where the node's pod cache and queued upgrades are kept (default ${defaultStateDir})`,
    "token-file":
      "file holding the bearer token callers must send (or set EDGEROLL_TOKEN); none needed on loopback",
    "require-token": "ask callers for the token on loopback too",
  },
  async run(args) {
    const node = stringOption(args, "node");
    if (!node) throw new UsageError("--node is required: the node this agent serves");
    const tokenFile = stringOption(args, "token-file");
    // Set but blank is a mistake to report, not "no token": it would leave loopback open.
    const token = tokenFile !== undefined
      ? readFileSync(tokenFile, "utf8")
      : process.env.EDGEROLL_TOKEN;
    if (token !== undefined && token.trim() === "") {
      throw new UsageError(
        tokenFile !== undefined
          ? `the token file ${tokenFile} is empty`
          : "EDGEROLL_TOKEN is set but empty",
      );
    }
    let agent;
    try {
      agent = await startEdgeAgent({
        connection: loadLeanConnection(stringOption(args, "kubeconfig")),
        node,
        token,
        requireToken: args.values["require-token"] === true,
        stateDir: stringOption(args, "state-dir") ?? defaultStateDir,
        hostname: stringOption(args, "host"),
        port: intOption(args, "port", defaultEdgePort, { min: 0, max: 65535 }),
      });
    } catch (err) {
      // A missing token, an unusable kubeconfig or state directory: the user's to fix, said.
      throw new UsageError((err as Error).message);
    }
    await untilStopSignal();
    await agent.stop();
    return 0;
  },
};
