/** `edgeroll relay --target URL`: watch the cluster, post CloudEvents to the controller. */
import { type Command, stringOption, UsageError } from "../lib/command.ts";
import { parseDuration } from "../lib/duration.ts";
import { untilStopSignal } from "../lib/signals.ts";
import { createLogger } from "../lib/log.ts";
import { kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import { startRelay } from "./relay.ts";

export const relayCommand: Command = {
  name: "relay",
  summary: "Watch sets, their pods and nodes; post what changed to the controller as CloudEvents.",
  usage:
    "--target URL [--ca-file F] [--kubeconfig PATH] [--token-file F] [--flush 100ms] [--idle 90s] [--kruise]",
  options: {
    target: { type: "string" },
    "ca-file": { type: "string" },
    kubeconfig: { type: "string" },
    "token-file": { type: "string" },
    flush: { type: "string" },
    idle: { type: "string" },
    kruise: { type: "boolean" },
  },
  help: {
    target: "the controller's base URL, e.g. https://edgeroll:8443 (events go to /events)",
    "ca-file":
      "PEM CA certificates that sign an https target's certificate (default: the system's)",
    kubeconfig: kubeconfigHelp,
    "token-file": "bearer token for the controller, read before each post (or EDGEROLL_TOKEN)",
    flush:
      "least time between two posts; the first event after a quiet spell goes at once (default 100ms)",
    idle: "restart a watch that said nothing for this long (default 90s)",
    kruise: "also watch Kruise's DaemonSets and their pods (with serve --kruise)",
  },
  async run(args) {
    const target = stringOption(args, "target");
    if (!target || !/^https?:\/\//.test(target)) {
      throw new UsageError("--target http(s)://HOST:PORT is required");
    }
    const tokenFile = stringOption(args, "token-file");
    // Read before each post: a projected ServiceAccount token is rotated in place.
    const readToken = () => Deno.readTextFileSync(tokenFile!).trim();
    if (tokenFile) readToken(); // a missing or unreadable file fails here, not at the first post
    const token = tokenFile ? readToken : Deno.env.get("EDGEROLL_TOKEN")?.trim();
    const flush = stringOption(args, "flush");
    const idle = stringOption(args, "idle");
    const caFile = stringOption(args, "ca-file");
    if (caFile !== undefined && !target.startsWith("https://")) {
      throw new UsageError("--ca-file needs an https:// --target");
    }
    const client = caFile === undefined
      ? undefined
      : Deno.createHttpClient({ caCerts: [Deno.readTextFileSync(caFile)] });
    const relay = startRelay({
      kubeConfig: loadKubeConfig(stringOption(args, "kubeconfig")),
      target,
      token,
      logger: createLogger(),
      flushMs: flush === undefined ? undefined : parseDuration(flush, "flush"),
      idleMs: idle === undefined ? undefined : parseDuration(idle, "idle"),
      fetch: client && ((input, init) => fetch(input, { ...init, client })),
      kruise: args.values.kruise === true,
    });
    await untilStopSignal();
    await relay.stop();
    client?.close();
    return 0;
  },
};
