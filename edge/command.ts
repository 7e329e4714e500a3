/**
 * `edgeroll edge`: the edge agent as a command, for `main.ts` and for the Node single
 * executable (`edge/node-main.ts`) alike; `node:` built-ins only, no `Deno.*`.
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { type Command, intOption, stringOption, UsageError } from "../lib/command.ts";
import { untilStopSignal } from "../lib/signals.ts";
import { kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import { staticTokenAuthenticator } from "../routes/auth.ts";
import { defaultEdgePort, startEdgeAgent } from "./agent.ts";

export const edgeCommand: Command = {
  name: "edge",
  summary: "Run the edge agent: OpenYurt's OTA API (GET /pods, upgrade) for one node, on loopback.",
  usage:
    `--node NAME [--kubeconfig PATH] [--port ${defaultEdgePort}] [--host 127.0.0.1] [--token-file F]`,
  options: {
    node: { type: "string" },
    kubeconfig: { type: "string" },
    port: { type: "string" },
    host: { type: "string" },
    "token-file": { type: "string" },
  },
  help: {
    node: "the node this agent serves: only its pods are listed and upgraded",
    kubeconfig: kubeconfigHelp,
    port: `port to listen on (default ${defaultEdgePort}, as YurtHub)`,
    host: "address to listen on (default 127.0.0.1)",
    "token-file": "file holding the bearer token callers send (or set EDGEROLL_TOKEN)",
  },
  async run(args) {
    const node = stringOption(args, "node");
    if (!node) throw new UsageError("--node is required: the node this agent serves");
    const tokenFile = stringOption(args, "token-file");
    const token = tokenFile !== undefined
      ? readFileSync(tokenFile, "utf8")
      : process.env.EDGEROLL_TOKEN;
    if (token === undefined || token.trim() === "") {
      throw new UsageError(
        `give --token-file (or EDGEROLL_TOKEN) with the bearer token callers send${
          tokenFile ? `: ${tokenFile} is empty` : ""
        }`,
      );
    }
    const agent = await startEdgeAgent({
      kubeConfig: loadKubeConfig(stringOption(args, "kubeconfig")),
      node,
      auth: staticTokenAuthenticator(token),
      hostname: stringOption(args, "host"),
      port: intOption(args, "port", defaultEdgePort, { min: 0, max: 65535 }),
    });
    await untilStopSignal();
    await agent.stop();
    return 0;
  },
};
