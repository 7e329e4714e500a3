/** `edgeroll reconcile KIND/ns/name`: one reconcile step against a cluster, answer printed. */
import { type Command, stringOption } from "../lib/command.ts";
import { createLogger } from "../lib/log.ts";
import { plan } from "../engine/plan.ts";
import { clientNodeApi } from "../kube/api.ts";
import { KubeClient } from "../kube/client.ts";
import { kubeconfigHelp, loadKubeConfig } from "../kube/config.ts";
import { errorBody } from "../routes/errors.ts";
import { createReconciler } from "../controller/reconciler.ts";
import { parseSetArg } from "./status-command.ts";
import { analysisHostsFromArgs, analysisHostsHelp } from "./serve.ts";
import { createAnalyzer } from "../controller/analysis.ts";

export const reconcileCommand: Command = {
  name: "reconcile",
  summary: "Run one reconcile step of a set against the cluster and print the answer as JSON.",
  usage:
    "advanceddaemonsets|daemonsets/NAMESPACE/NAME [--dry-run] [--kubeconfig PATH] [--analysis-hosts HOST:PORT,...]",
  options: {
    kubeconfig: { type: "string" },
    "dry-run": { type: "boolean" },
    "analysis-hosts": { type: "string" },
  },
  help: {
    kubeconfig: kubeconfigHelp,
    "dry-run": "plan only: print what would be done, write nothing",
    "analysis-hosts": analysisHostsHelp,
  },
  async run(args) {
    const ref = parseSetArg(args.positionals[0], "advanceddaemonsets");
    const kube = new KubeClient(clientNodeApi(loadKubeConfig(stringOption(args, "kubeconfig"))));
    const reconcile = createReconciler({
      kube,
      plan,
      clock: Date.now,
      logger: createLogger(),
      analyzer: createAnalyzer({
        allowedHosts: analysisHostsFromArgs(args),
        readCredentials: (namespace, name) => kube.readAnalysisCredentials(namespace, name),
      }),
    });
    try {
      const answer = await reconcile(ref, { dryRun: args.values["dry-run"] === true });
      console.log(JSON.stringify(answer, null, 2));
      return answer.actions.some((a) => a.result === "failed") ? 1 : 0;
    } catch (err) {
      console.log(JSON.stringify({ error: errorBody(err) }, null, 2));
      return 1;
    }
  },
};
