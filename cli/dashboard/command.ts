/**
 * `edgeroll dashboard` (and `kubectl edgeroll dashboard`): the fleet in a browser, served on
 * loopback with the caller's kubeconfig, as Argo Rollouts' dashboard is. Its actions run the
 * CLI's own pause, resume, undo, approve, promote and abort with the same kubeconfig.
 */
import { type Command, intOption, stringOption } from "../../lib/command.ts";
import { createLogger } from "../../lib/log.ts";
import { untilStopSignal } from "../../lib/signals.ts";
import { kubeconfigHelp, loadKubeConfig } from "../../kube/config.ts";
import { abort, approve, pause, promote, resume, SetAccess, undo } from "../rollout-commands.ts";
import { createDashboardApp, type DashboardAction } from "./app.tsx";
import { kubeFleet } from "./fleet.ts";

export const defaultDashboardPort = 3100;

export const dashboardCommand: Command = {
  name: "dashboard",
  summary: "Serve a live dashboard of the managed sets and their nodes on 127.0.0.1.",
  usage: `[--port ${defaultDashboardPort}] [--kubeconfig PATH]`,
  options: { port: { type: "string" }, kubeconfig: { type: "string" } },
  help: {
    port: `port on 127.0.0.1 (default ${defaultDashboardPort}; 0: any free port)`,
    kubeconfig: kubeconfigHelp,
  },
  async run(args) {
    const kubeconfig = stringOption(args, "kubeconfig");
    const port = intOption(args, "port", defaultDashboardPort, { min: 0, max: 65535 });
    const logger = createLogger({}, { component: "dashboard" });
    const fleet = kubeFleet(loadKubeConfig(kubeconfig), logger);
    const run: Record<DashboardAction, (sets: SetAccess) => Promise<string>> = {
      pause,
      resume,
      undo: (sets) => undo(sets, 0),
      approve,
      promote,
      abort,
    };
    const closing = new AbortController();
    const app = createDashboardApp({
      fleet,
      logger,
      closing: closing.signal,
      token: crypto.randomUUID(),
      act: (action, ref) => run[action](new SetAccess(ref, kubeconfig)),
    });
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port,
      onListen: ({ port }) => {
        logger.info("dashboard listening", { url: `http://127.0.0.1:${port}/` });
      },
    }, app.fetch);
    await untilStopSignal();
    closing.abort();
    await server.shutdown();
    await fleet.close();
    return 0;
  },
};
