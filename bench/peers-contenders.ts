/**
 * The controllers `bench/peers.ts` sets side by side, each as its users run it against the same
 * cluster/: kube-controller-manager's DaemonSet controller (a kube-controller-manager of its
 * own, `--controllers=daemonset`, while the cluster's runs every other controller),
 * kruise-manager (out of cluster, ADR 0030), and edgeroll (two `serve` replicas, one holding the
 * Lease and doing the work, ADR 0038); and the floor, a bare executor with no controller logic
 * (`bench/floor-executor.ts`).
 * Each talks to the API server through a forwarder of its own (its bytes read) as a user of its
 * own (its requests in the audit log), and each row names the set it rolls.
 */
import { clientKubeconfig, type ClusterState } from "../cluster/control-plane.ts";
import { kruiseManagerUser, startKruiseManager } from "../cluster/kruise-manager.ts";
import { type NodeProxy, startNodeProxy } from "../cluster/node-proxy.ts";
import { kubectlJson } from "../cluster/kubectl.ts";
import { freePort, startDetached, stopProcesses } from "../cluster/processes.ts";
import { baseEventArgs, imageEnv, withControllers } from "../tests/processes.ts";

/** The cluster a bench runs on, and where its logs go. */
export interface BenchCluster {
  state: ClusterState;
  binDir: string;
  /** Where each contender's log and the API server's audit log go. */
  logDir: string;
  auditLogPath: string;
}

/** What runs for a row: the processes to measure and what they read through their forwarder. */
export interface Running {
  /** The processes doing the work. */
  pids: number[];
  /** Hot standbys, reported apart (as a peer's would be): they only wait for a Lease. */
  standbyPids?: number[];
  bytesRead(): number;
  /** Throws when the processes did not work as `pids` says (the standby took the Lease). */
  verify?(): Promise<void>;
}

type WithRunning = (cluster: BenchCluster, body: (running: Running) => Promise<void>) => Promise<
  void
>;

/** The percentages of the fleet a rollout may take down and add. */
export interface Budget {
  maxUnavailablePercent: number;
  maxSurgePercent: number;
}

export interface Contender {
  /** The table's row. */
  row: string;
  /** The API server users whose requests are the contender's. */
  users: string[];
  budget: Budget;
  /** The set's resource as kubectl names it, and its manifest at `image`. */
  resource: string;
  manifest(namespace: string, image: string): unknown;
  run: WithRunning;
}

const app = "peer-agent";

/** The namespace a contender's set lives in. */
export const contenderNamespace = (key: string) => `peers-${key}`;
const kcmUser = "peers-kube-controller-manager";
const budget = { maxUnavailablePercent: 10, maxSurgePercent: 0 };

function template(image: string) {
  return {
    metadata: { labels: { app } },
    spec: { terminationGracePeriodSeconds: 0, containers: [{ name: "agent", image }] },
  };
}

const metadata = (namespace: string, annotations?: Record<string, string>) => ({
  name: app,
  namespace,
  ...(annotations ? { annotations } : {}),
});

/** A forwarder of its own to the API server, for `body`. */
async function withForwarder<T>(
  cluster: BenchCluster,
  body: (proxy: NodeProxy) => Promise<T>,
): Promise<T> {
  const server = new URL(cluster.state.server);
  const proxy = startNodeProxy({ hostname: server.hostname, port: Number(server.port) });
  try {
    return await body(proxy);
  } finally {
    await proxy.close();
  }
}

/** A forwarder and a kubeconfig through it as `subject`, for `body`. */
function withOwnWay<T>(
  cluster: BenchCluster,
  name: string,
  subject: string,
  body: (kubeconfigPath: string, proxy: NodeProxy) => Promise<T>,
): Promise<T> {
  return withForwarder(cluster, async (proxy) => {
    const server = proxy.url;
    return await body(await clientKubeconfig(cluster.state, name, subject, { server }), proxy);
  });
}

/**
 * kube-controller-manager running its DaemonSet controller alone, each controller as its own
 * ServiceAccount (as the cluster's): its requests are `daemon-set-controller`'s, and those of
 * the process itself (the Events it records among them) its own user's, not the cluster's
 * kube-controller-manager's.
 */
const withDaemonSetController: WithRunning = (cluster, body) =>
  withOwnWay(
    cluster,
    "peers-kcm",
    `/O=system:masters/CN=${kcmUser}`,
    async (kubeconfig, proxy) => {
      const started = await startDetached(
        "kube-controller-manager",
        `${cluster.binDir}/kube-controller-manager`,
        [
          `--kubeconfig=${kubeconfig}`,
          "--controllers=daemonset",
          "--use-service-account-credentials=true",
          "--leader-elect=false",
          "--bind-address=127.0.0.1",
          `--secure-port=${freePort()}`,
          `--cert-dir=${cluster.logDir}/peers-kcm-certs`,
        ],
        `${cluster.logDir}/peers-kube-controller-manager.log`,
      );
      try {
        await body({ pids: [started.pid], bytesRead: () => proxy.bytesRead });
      } finally {
        await stopProcesses([started]);
      }
    },
  );

/** kruise-manager as its own user (ADR 0030), its DaemonSet CRD and webhooks Kruise's own. */
const withKruiseManager: WithRunning = (cluster, body) =>
  withForwarder(cluster, async (proxy) => {
    const manager = await startKruiseManager(cluster.state, {
      binDir: cluster.binDir,
      server: proxy.url,
      logPath: `${cluster.logDir}/peers-kruise-manager.log`,
    });
    try {
      await body({ pids: [manager.pid], bytesRead: () => proxy.bytesRead });
    } finally {
      await manager.stop();
    }
  });

/** The Lease edgeroll's replicas take turns at (ADR 0038). */
const edgerollLease = "default/edgeroll-peers";

/**
 * edgeroll as deployed (manifests/base, ADR 0038): two `serve` replicas behind one Lease, the
 * first started taking it and doing the work (its watches in-process, no relay), the second a
 * hot standby, measured apart. A bench in which the standby took the Lease fails.
 */
const withEdgeroll: WithRunning = (cluster, body) =>
  withOwnWay(
    cluster,
    "peers-edgeroll",
    "/O=system:masters/CN=edgeroll",
    (kubeconfig, proxy) =>
      withControllers(kubeconfig, {
        replicas: 2,
        // As deployed: a CronJob posts /tick every minute, the base's event delay, and the
        // image's V8 flags.
        serveArgs: ["--tick=60s", `--lease=${edgerollLease}`, ...baseEventArgs()],
        env: imageEnv(),
        logPath: `${cluster.logDir}/peers-edgeroll.log`,
      }, (controllers) => {
        const [working, standby] = controllers.pids;
        return body({
          pids: [working],
          standbyPids: [standby],
          bytesRead: () => proxy.bytesRead,
          verify: async () => {
            const [namespace, name] = edgerollLease.split("/");
            const lease = await kubectlJson<{ spec?: { holderIdentity?: string } }>(
              cluster.state.kubeconfigPath,
              ["--namespace", namespace, "get", "lease", name],
            );
            const holder = lease.spec?.holderIdentity ?? "";
            if (!holder.endsWith(`-${working}`)) {
              throw new Error(`the Lease is held by ${holder}, not the first replica (${working})`);
            }
          },
        });
      }),
  );

/** The floor: `bench/floor-executor.ts` as its own user, rolling the set of `contenderNamespace("floor")`. */
const withFloorExecutor: WithRunning = (cluster, body) =>
  withOwnWay(
    cluster,
    "peers-floor",
    "/O=system:masters/CN=peers-floor",
    async (kubeconfig, proxy) => {
      const started = await startDetached(
        "floor-executor",
        Deno.execPath(),
        [
          "run",
          "-A",
          new URL("floor-executor.ts", import.meta.url).pathname,
          `--kubeconfig=${kubeconfig}`,
          `--namespace=${contenderNamespace("floor")}`,
          `--name=${app}`,
          `--max-unavailable-percent=${budget.maxUnavailablePercent}`,
        ],
        `${cluster.logDir}/peers-floor.log`,
      );
      try {
        await body({ pids: [started.pid], bytesRead: () => proxy.bytesRead });
      } finally {
        await stopProcesses([started]);
      }
    },
  );

/** OpenYurt's split: the DaemonSet controller creates pods, edgeroll deletes old ones. */
const withDaemonSetControllerAndEdgeroll: WithRunning = (cluster, body) =>
  withDaemonSetController(cluster, (kcm) =>
    withEdgeroll(cluster, (edgeroll) =>
      body({
        pids: [...kcm.pids, ...edgeroll.pids],
        standbyPids: edgeroll.standbyPids,
        bytesRead: () => kcm.bytesRead() + edgeroll.bytesRead(),
        verify: edgeroll.verify,
      })));

const kcmUsers = [kcmUser, "system:serviceaccount:kube-system:daemon-set-controller"];

const advancedDaemonSet =
  (rollingUpdate: Record<string, unknown>) => (namespace: string, image: string) => ({
    apiVersion: "apps.edgeroll.dev/v1alpha1",
    kind: "AdvancedDaemonSet",
    metadata: metadata(namespace),
    spec: {
      selector: { matchLabels: { app } },
      template: template(image),
      updateStrategy: { type: "RollingUpdate", rollingUpdate },
    },
  });

/** An apps/v1 DaemonSet of the agent with `updateStrategy`, and `annotations` if given. */
const daemonSet =
  (updateStrategy: unknown, annotations?: Record<string, string>) =>
  (namespace: string, image: string) => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: metadata(namespace, annotations),
    spec: { selector: { matchLabels: { app } }, template: template(image), updateStrategy },
  });

export const contenders: Record<string, Contender> = {
  kcm: {
    row: "kube-controller-manager (DaemonSet, RollingUpdate)",
    users: kcmUsers,
    budget,
    resource: "daemonsets.apps",
    manifest: daemonSet({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: "10%" } }),
    run: withDaemonSetController,
  },
  kruise: {
    row: "kruise-manager (Advanced DaemonSet, Standard)",
    users: [kruiseManagerUser],
    budget,
    resource: "daemonsets.apps.kruise.io",
    manifest: (namespace, image) => ({
      apiVersion: "apps.kruise.io/v1alpha1",
      kind: "DaemonSet",
      metadata: metadata(namespace),
      spec: {
        selector: { matchLabels: { app } },
        template: template(image),
        updateStrategy: {
          type: "RollingUpdate",
          rollingUpdate: { rollingUpdateType: "Standard", maxUnavailable: "10%" },
        },
      },
    }),
    run: withKruiseManager,
  },
  edgeroll: {
    row: "edgeroll (AdvancedDaemonSet, Standard)",
    users: ["edgeroll"],
    budget,
    resource: "advanceddaemonsets",
    manifest: advancedDaemonSet({ rollingUpdateType: "Standard", maxUnavailable: "10%" }),
    run: withEdgeroll,
  },
  "edgeroll-surge": {
    row: "edgeroll (AdvancedDaemonSet, surge 10%)",
    users: ["edgeroll"],
    budget: { maxUnavailablePercent: 0, maxSurgePercent: 10 },
    resource: "advanceddaemonsets",
    manifest: advancedDaemonSet({
      rollingUpdateType: "Standard",
      maxSurge: "10%",
      maxUnavailable: 0,
    }),
    run: withEdgeroll,
  },
  openyurt: {
    row: "edgeroll + DaemonSet controller (OpenYurt AdvancedRollingUpdate)",
    users: ["edgeroll", ...kcmUsers],
    budget,
    resource: "daemonsets.apps",
    manifest: daemonSet({ type: "OnDelete" }, {
      "apps.openyurt.io/update-strategy": "AdvancedRollingUpdate",
      "apps.openyurt.io/max-unavailable": "10%",
    }),
    run: withDaemonSetControllerAndEdgeroll,
  },
  floor: {
    row: "floor: a bare executor (deletes and creates pods within the budget, no controller)",
    users: ["peers-floor"],
    budget,
    resource: "daemonsets.apps",
    // A DaemonSet no controller acts on (the bench's kube-controller-manager runs without its
    // DaemonSet controller): the floor reads its image and places the pods itself.
    manifest: daemonSet({ type: "OnDelete" }),
    run: withFloorExecutor,
  },
};

export const peerApp = app;
