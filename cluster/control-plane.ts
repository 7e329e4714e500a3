/**
 * A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler and kwok (the fake kubelets of nodes edge-1…edge-N), from the binaries that
 * cluster/build.sh puts in cluster/bin.
 *
 * `upCluster` first stops whatever a stray state file names, then writes the state file after
 * every process it starts, so a crash half-way through still leaves a record for
 * `downCluster` to clean. `stopApiServer` and `startApiServer` take kube-apiserver alone down
 * and up again (etcd keeps the data), the state file following its PID.
 */
import { stringify } from "yaml";
import {
  type ClientCertificate,
  type ClientName,
  type ClusterPki,
  writeClientCertificate,
  writePki,
} from "./certs.ts";
import { kubectl, kubectlJson } from "./kubectl.ts";
import {
  freePort,
  isAlive,
  logTail,
  sleep,
  startDetached,
  type StartedProcess,
  stopProcesses,
} from "./processes.ts";

const clusterDir = new URL(".", import.meta.url).pathname;
const repoDir = new URL("..", import.meta.url).pathname;

export const defaultBinDir = `${clusterDir}bin`;
export const defaultStatePath = `${repoDir}.cache/cluster/state.json`;
const nodeStagesPath = `${clusterDir}kwok-node-stages.yaml`;
const podStagesPath = `${clusterDir}kwok-pod-stages.yaml`;
/** Put beside the binaries by cluster/build.sh, from the pinned kwok module. */
const stageCrdFile = "kwok-stage-crd.yaml";
const components = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok",
] as const;

/**
 * How fast a silent node turns NotReady: kwok renews each Lease every quarter of its
 * duration (3 s), and the node lifecycle controller gives up after the grace period (two
 * thirds of the duration: 8 s).
 */
const defaultNodeLeaseDurationSeconds = 12;

/**
 * kwok's workers for pod stages and for node Leases: its default of 4 each stands for every
 * kubelet of the fleet at once, where a real fleet's kubelets work in parallel (at 5,000 nodes a
 * rollout is about 10,000 stage writes). One worker per 250 nodes, never fewer than kwok's 4,
 * leaves fleets up to 1,000 nodes as before. What it changed at 5,000 nodes was not isolated
 * (ADR 0040: kwok stayed latency-bound).
 */
export const kwokParallelism = (nodes: number) => Math.max(4, Math.ceil(nodes / 250));

export interface ClusterOptions {
  nodes: number;
  /** Where the admin kubeconfig goes (default: inside the work directory). */
  kubeconfigPath?: string;
  binDir?: string;
  statePath?: string;
  /** One JSON-able event per step, for progress lines. */
  log?: (event: Record<string, unknown>) => void;
  /** Nodes labelled `topology.kubernetes.io/zone` zone-0…zone-(zones-1), round robin. */
  zones?: number;
  /**
   * How long kwok takes from a pod's bind to its Running and Ready (its pod-ready stage's delay;
   * default none): a fixed start time, so a rollout's minimum is known.
   */
  podReadyDelayMs?: number;
  /** A node's Lease duration (default 12 s); fleets of thousands renew less often. */
  nodeLeaseDurationSeconds?: number;
  /** kube-controller-manager's `--controllers` (default all), e.g. `["*", "-daemonset"]`. */
  controllerManagerControllers?: string[];
  /** kube-apiserver writes an audit log of what `policy` (an audit.k8s.io/v1 Policy) selects. */
  audit?: { policy: unknown; logPath: string };
  /** kube-apiserver serves `/debug/pprof` (default off), for `bench/apiserver-heap.ts`. */
  profiling?: boolean;
}

export interface ClusterState {
  workDir: string;
  kubeconfigPath: string;
  server: string;
  nodes: string[];
  /** In start order; stopped in reverse. */
  processes: StartedProcess[];
  /** kube-apiserver's arguments, for `startApiServer` to start it again as it was. */
  apiserverArgs: string[];
}

export function nodeNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `edge-${i + 1}`);
}

export async function upCluster(options: ClusterOptions): Promise<ClusterState> {
  const statePath = options.statePath ?? defaultStatePath;
  const log = options.log ?? (() => {});
  const stray = await readState(statePath);
  if (stray) {
    log({ msg: "stopping a stray cluster", pids: stray.processes.map((p) => p.pid) });
    await stopCluster(stray);
    await Deno.remove(statePath).catch(() => {});
  }
  const binDir = options.binDir ?? defaultBinDir;
  const missing = [...components, stageCrdFile].filter((name) => !exists(`${binDir}/${name}`));
  if (missing.length > 0) {
    throw new Error(`${binDir} lacks ${missing.join(", ")}: run cluster/build.sh first`);
  }
  const bin = (name: typeof components[number]) => `${binDir}/${name}`;
  const leaseSeconds = options.nodeLeaseDurationSeconds ?? defaultNodeLeaseDurationSeconds;

  const workDir = await Deno.makeTempDir({ prefix: "edgeroll-cluster-" });
  const pki = await writePki(`${workDir}/pki`);
  const etcdClientPort = freePort();
  const apiserverPort = freePort();
  const server = `https://127.0.0.1:${apiserverPort}`;
  const auditArgs: string[] = [];
  if (options.audit) {
    const policyPath = `${workDir}/audit-policy.json`;
    await Deno.writeTextFile(policyPath, JSON.stringify(options.audit.policy));
    auditArgs.push(
      `--audit-policy-file=${policyPath}`,
      `--audit-log-path=${options.audit.logPath}`,
      // Batched: the log's writes stay off the requests' path.
      "--audit-log-mode=batch",
      "--audit-log-batch-max-wait=1s",
      "--audit-log-maxsize=0",
    );
  }
  const apiserverArgs = [
    `--etcd-servers=http://127.0.0.1:${etcdClientPort}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiserverPort}`,
    `--cert-dir=${workDir}/apiserver`,
    `--tls-cert-file=${pki.servingCertPath}`,
    `--tls-private-key-file=${pki.servingKeyPath}`,
    `--client-ca-file=${pki.caCertPath}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${pki.serviceAccountPublicKeyPath}`,
    `--service-account-signing-key-file=${pki.serviceAccountKeyPath}`,
    "--service-cluster-ip-range=10.96.0.0/16",
    "--authorization-mode=Node,RBAC",
    // As kubeadm: a node (the edge agent with its node's credentials) writes only its own pods.
    "--enable-admission-plugins=NodeRestriction",
    // No real endpoints behind the kubernetes Service: nothing here would route to them.
    "--endpoint-reconciler-type=none",
    "--allow-privileged=true",
    `--profiling=${options.profiling === true}`,
    ...auditArgs,
  ];
  const state: ClusterState = {
    workDir,
    kubeconfigPath: options.kubeconfigPath ?? `${workDir}/admin.kubeconfig`,
    server,
    nodes: nodeNames(options.nodes),
    processes: [],
    apiserverArgs,
  };
  const save = () => writeState(statePath, state);
  await save();
  const kubeconfigOf = async (client: ClientName, path = `${workDir}/${client}.kubeconfig`) => {
    await Deno.writeTextFile(path, await kubeconfigYaml(server, pki, pki.clients[client], client));
    return path;
  };
  const start = async (name: typeof components[number], args: string[]) => {
    const started = await startDetached(name, bin(name), args, `${workDir}/${name}.log`);
    state.processes.push(started);
    await save();
    log({ msg: "started", component: name, pid: started.pid });
    return started;
  };

  try {
    const etcdPeerPort = freePort();
    const etcd = await start("etcd", [
      "--name=edgeroll",
      `--data-dir=${workDir}/etcd`,
      `--listen-client-urls=http://127.0.0.1:${etcdClientPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClientPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=edgeroll=http://127.0.0.1:${etcdPeerPort}`,
      // Test data: durability buys nothing and costs fsyncs on a shared disk.
      "--unsafe-no-fsync",
      "--log-level=warn",
    ]);
    await waitFor("etcd to serve", etcd, async () => {
      const response = await fetch(`http://127.0.0.1:${etcdClientPort}/health`);
      return response.ok && (await response.json()).health === "true";
    });

    state.kubeconfigPath = await kubeconfigOf("admin", state.kubeconfigPath);
    const apiserver = await start("kube-apiserver", state.apiserverArgs);
    await untilApiServerReady(state, apiserver);

    const controllerManager = await start("kube-controller-manager", [
      `--kubeconfig=${await kubeconfigOf("kube-controller-manager")}`,
      "--leader-elect=false",
      "--bind-address=127.0.0.1",
      `--secure-port=${freePort()}`,
      `--cert-dir=${workDir}/kube-controller-manager`,
      `--service-account-private-key-file=${pki.serviceAccountKeyPath}`,
      `--root-ca-file=${pki.caCertPath}`,
      // Each controller acts as its own ServiceAccount, with the roles the apiserver bootstraps
      // for it (system:kube-controller-manager alone may not create ControllerRevisions).
      "--use-service-account-credentials=true",
      "--node-monitor-period=1s",
      `--node-monitor-grace-period=${Math.ceil(leaseSeconds * 2 / 3)}s`,
      // The node lifecycle controller lifts each new node's not-ready taint with a request of its
      // own: at the default 20 a second (shared with every other controller here) it lifted about
      // five a second, some 17 minutes for 5,000 nodes. ClusterLoader2 gives 100 to large clusters.
      // (Not the DaemonSet controller that bench:peers runs as a contender: that keeps its own.)
      "--kube-api-qps=100",
      "--kube-api-burst=200",
      ...(options.controllerManagerControllers
        ? [`--controllers=${options.controllerManagerControllers.join(",")}`]
        : []),
    ]);
    const scheduler = await start("kube-scheduler", [
      `--kubeconfig=${await kubeconfigOf("kube-scheduler")}`,
      "--leader-elect=false",
      "--bind-address=127.0.0.1",
      `--secure-port=${freePort()}`,
      `--cert-dir=${workDir}/kube-scheduler`,
    ]);
    // kwok's pod controller honours Lease takeover only if kwok started its node controller
    // first, which it does in map order, i.e. at random, for stages given with --config
    // (ADR 0018). Given as Stage objects, each kind's controller starts when its first Stage
    // appears: the node stages now, the pod stages once kwok manages the nodes.
    await kubectl(state.kubeconfigPath, ["create", "-f", `${binDir}/${stageCrdFile}`]);
    await kubectl(state.kubeconfigPath, [
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      "customresourcedefinition/stages.kwok.x-k8s.io",
    ]);
    await kubectl(state.kubeconfigPath, ["create", "-f", nodeStagesPath]);
    const kwokConfigPath = `${workDir}/kwok-configuration.json`;
    const parallelism = kwokParallelism(state.nodes.length);
    await Deno.writeTextFile(
      kwokConfigPath,
      JSON.stringify({
        apiVersion: "config.kwok.x-k8s.io/v1alpha1",
        kind: "KwokConfiguration",
        options: { podPlayStageParallelism: parallelism, nodeLeaseParallelism: parallelism },
      }),
    );
    const kwok = await start("kwok", [
      `--kubeconfig=${await kubeconfigOf("kwok")}`,
      // Options only: the stages stay Stage objects (see above).
      `--config=${kwokConfigPath}`,
      "--enable-crds=Stage",
      "--manage-all-nodes=true",
      `--node-lease-duration-seconds=${leaseSeconds}`,
      // Addresses only written into node and pod status; nothing is ever sent to them.
      "--node-ip=10.0.0.1",
      "--cidr=10.0.0.1/16",
    ]);

    await kubectl(
      state.kubeconfigPath,
      ["create", "-f", "-"],
      nodeListJson(state.nodes, options.zones),
    );
    log({ msg: "nodes created", nodes: state.nodes.length });
    const running = [etcd, apiserver, controllerManager, scheduler, kwok];
    const kwokStages = { kubeconfigPath: state.kubeconfigPath, kwok, running, log };
    await settleKwokStages(kwokStages, "Node", "node-ready");
    // kwok readies a few hundred nodes a second here: 3 min, and more for fleets of thousands.
    await waitFor(`${state.nodes.length} nodes to be Ready and untainted`, running, async () => {
      const list = await kubectlJson<NodeList>(state.kubeconfigPath, ["get", "nodes"]);
      return list.items.filter(isReadyAndUntainted).length === state.nodes.length;
    }, Math.max(180_000, state.nodes.length * 300));
    // Only kwok's node controller makes a node Ready: it has started, the pod controller has not.
    await kubectl(
      state.kubeconfigPath,
      ["create", "-f", "-"],
      await podStagesJson(state.kubeconfigPath, options.podReadyDelayMs),
    );
    await settleKwokStages(kwokStages, "Pod", "pod-ready");
    // Pods are refused until the service-account controller made the namespace's account.
    await waitFor("the default ServiceAccount", running, async () => {
      try {
        await kubectl(state.kubeconfigPath, ["get", "serviceaccount", "default"]);
        return true;
      } catch {
        return false;
      }
    });
    return state;
  } catch (err) {
    await stopCluster(state);
    await Deno.remove(statePath).catch(() => {});
    throw err;
  }
}

/** Stops the processes (reverse start order) and removes the work directory and kubeconfig. */
export async function stopCluster(state: ClusterState): Promise<void> {
  await stopProcesses([...state.processes].reverse());
  await Deno.remove(state.workDir, { recursive: true }).catch(() => {});
  await Deno.remove(state.kubeconfigPath).catch(() => {});
}

/** Stops the cluster a state file names, if any; returns whether there was one. */
export async function downCluster(statePath = defaultStatePath): Promise<boolean> {
  const state = await readState(statePath);
  if (!state) return false;
  await stopCluster(state);
  await Deno.remove(statePath).catch(() => {});
  return true;
}

/**
 * Stops kube-apiserver alone, as `stopCluster` stops each process: its clients are refused, the
 * other components run on and retry, etcd keeps what it stored. Its PID stays in the state file,
 * where `downCluster` skips it once gone, until `startApiServer` replaces it.
 */
export async function stopApiServer(state: ClusterState): Promise<void> {
  await stopProcesses([state.processes[apiserverIndex(state)]]);
}

/**
 * Starts kube-apiserver again with the arguments `upCluster` gave it (the same port, the same
 * etcd), its log appended to, and records its PID in the state file in place of the old one, so
 * `downCluster` stops it; returns once it answers `/readyz`. Refuses while the old one still runs:
 * the new one could not listen, and its PID would replace one that still has to be stopped.
 */
export async function startApiServer(
  state: ClusterState,
  statePath = defaultStatePath,
): Promise<void> {
  const index = apiserverIndex(state);
  const stopped = state.processes[index];
  if (await isAlive(stopped)) throw new Error(`kube-apiserver runs already (PID ${stopped.pid})`);
  const apiserver = await startDetached(
    stopped.name,
    stopped.binary,
    state.apiserverArgs,
    stopped.logPath,
  );
  state.processes[index] = apiserver;
  await writeState(statePath, state);
  await untilApiServerReady(state, apiserver);
}

function apiserverIndex(state: ClusterState): number {
  const index = state.processes.findIndex((p) => p.name === "kube-apiserver");
  if (index < 0) throw new Error("the cluster state names no kube-apiserver");
  return index;
}

/** Returns once kube-apiserver answers `/readyz` with ok; fails if `apiserver` exits first. */
function untilApiServerReady(state: ClusterState, apiserver: StartedProcess): Promise<void> {
  return waitFor(
    "kube-apiserver to be ready",
    apiserver,
    async () => (await kubectl(state.kubeconfigPath, ["get", "--raw=/readyz"])).trim() === "ok",
  );
}

export async function readState(statePath = defaultStatePath): Promise<ClusterState | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(statePath);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  return JSON.parse(text) as ClusterState;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

async function writeState(statePath: string, state: ClusterState): Promise<void> {
  await Deno.mkdir(statePath.slice(0, statePath.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(statePath, JSON.stringify(state, null, 2) + "\n");
}

interface NodeList {
  items: {
    spec?: { taints?: { key: string }[] };
    status?: { conditions?: { type: string; status: string }[] };
  }[];
}

/**
 * Ready, and no longer tainted not-ready: kube-controller-manager lifts that taint a while after
 * kwok reports the node Ready (about five nodes a second at 5,000), and a DaemonSet places no pod
 * on a node that carries it. A fleet handed over with half its nodes still tainted made the first
 * contender's set grow node by node as the taints went.
 */
function isReadyAndUntainted(node: NodeList["items"][number]): boolean {
  const ready = node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  return (ready ?? false) &&
    !(node.spec?.taints ?? []).some((t) => t.key === "node.kubernetes.io/not-ready");
}

function nodeListJson(names: string[], zones?: number): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: names.map((name, i) => ({
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name,
        labels: {
          "kubernetes.io/hostname": name,
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": "amd64",
          type: "kwok",
          ...(zones ? { "topology.kubernetes.io/zone": `zone-${i % zones}` } : {}),
        },
        annotations: { "kwok.x-k8s.io/node": "fake" },
      },
    })),
  });
}

interface Stage {
  metadata: { name: string };
  spec: { delay?: { durationMilliseconds: number } };
}

/** The pod stages (read by kubectl as JSON), pod-ready delayed by `readyDelayMs` if given. */
async function podStagesJson(kubeconfigPath: string, readyDelayMs?: number): Promise<string> {
  const printed = await kubectl(kubeconfigPath, [
    "create",
    "--dry-run=client",
    "--output=json",
    "-f",
    podStagesPath,
  ]);
  // One pretty-printed object per document, each opening with a line of its own.
  const stages = printed.split(/^(?=\{$)/m).map((text) => JSON.parse(text) as Stage);
  const ready = stages.find((stage) => stage.metadata.name === "pod-ready");
  if (!ready) throw new Error(`${podStagesPath} has no pod-ready stage`);
  if (readyDelayMs) ready.spec.delay = { durationMilliseconds: readyDelayMs };
  return JSON.stringify({ apiVersion: "v1", kind: "List", items: stages });
}

/**
 * A kubeconfig with the client certificate of the kubelet of `node`, as an edge agent on that
 * node has its kubelet's (the Node authorizer and NodeRestriction limit it to the node's pods).
 */
export function nodeKubeconfig(
  state: ClusterState,
  node: string,
  /** Where the node reaches the API server (a NodeProxy's URL); default directly. */
  server = state.server,
): Promise<string> {
  return clientKubeconfig(state, `node-${node}`, `/O=system:nodes/CN=system:node:${node}`, {
    server,
  });
}

/**
 * A kubeconfig with a new client certificate for `subject` (`/O=group/CN=user`): a client of its
 * own, told apart from the others by its user name (in the audit log, for instance); what it may
 * do is for RBAC to say. Written to `path` (default `<workDir>/<name>.kubeconfig`), reaching the
 * API server at `server` (default directly; a forwarder's URL, for instance).
 */
export async function clientKubeconfig(
  state: ClusterState,
  name: string,
  subject: string,
  options: { server?: string; path?: string } = {},
): Promise<string> {
  const pkiDir = `${state.workDir}/pki`;
  const pki = { caCertPath: `${pkiDir}/ca.crt`, caKeyPath: `${pkiDir}/ca.key` };
  const certificate = await writeClientCertificate(pki, pkiDir, name, subject);
  const path = options.path ?? `${state.workDir}/${name}.kubeconfig`;
  const server = options.server ?? state.server;
  await Deno.writeTextFile(path, await kubeconfigYaml(server, pki, certificate, name));
  return path;
}

async function kubeconfigYaml(
  server: string,
  pki: Pick<ClusterPki, "caCertPath">,
  certificate: ClientCertificate,
  user: string,
) {
  const base64 = async (path: string) => btoa(String.fromCharCode(...await Deno.readFile(path)));
  return stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "edgeroll",
      cluster: { server, "certificate-authority-data": await base64(pki.caCertPath) },
    }],
    users: [{
      name: user,
      user: {
        "client-certificate-data": await base64(certificate.certPath),
        "client-key-data": await base64(certificate.keyPath),
      },
    }],
    contexts: [{ name: "edgeroll", context: { cluster: "edgeroll", user } }],
    "current-context": "edgeroll",
  });
}

/**
 * Waits until kwok has started the controller of `kind`'s stages, then makes sure it holds every
 * one of them. kwok 0.7.0 caches its Stage list under the Stage informer's last-synced
 * resourceVersion, which is set before the informer's store holds what was listed or watched; a
 * read in between keeps the list as it was until some Stage changes (ADR 0049: one CI start waited
 * 180 s for nodes whose stages kwok never saw). Touching one of the kind's Stages, once its
 * creation events are in, changes that version, and kwok reads them all again.
 */
async function settleKwokStages(
  { kubeconfigPath, kwok, running, log }: {
    kubeconfigPath: string;
    kwok: StartedProcess;
    running: StartedProcess[];
    log: NonNullable<ClusterOptions["log"]>;
  },
  kind: "Node" | "Pod",
  stageName: string,
): Promise<void> {
  const started = async () =>
    (await Deno.readTextFile(kwok.logPath)).split("\n").some((line) =>
      line.includes(`"msg":"Start stage controller"`) && line.includes(`"Kind":"${kind}"`)
    );
  const touch = (count: number) =>
    kubectl(kubeconfigPath, [
      "annotate",
      "--overwrite",
      `stage/${stageName}`,
      `edgeroll.dev/kwok-stages-touched=${count}`,
    ]);
  const touches = 3;
  for (let count = 1; count <= touches; count++) {
    try {
      await waitFor(`kwok to start its ${kind} stage controller`, running, started, 10_000);
      // The creation events of the kind's other Stages arrive within milliseconds of the first.
      await sleep(300);
      await touch(count);
      return;
    } catch (err) {
      if (!(err instanceof WaitTimedOut) || count === touches) throw err;
      log({
        msg: "kwok missed its stages; touching one (ADR 0049)",
        kind,
        stage: stageName,
        count,
      });
      await touch(count);
    }
  }
}

/** `waitFor`'s deadline passed (a process it depends on dying is another error). */
class WaitTimedOut extends Error {
  override name = "WaitTimedOut";
}

/**
 * Polls `ready` until it holds. Fails at once, with the log's tail, if a process it depends on
 * died, and after `timeoutMs` otherwise.
 */
async function waitFor(
  what: string,
  dependsOn: StartedProcess | StartedProcess[],
  ready: () => Promise<boolean>,
  timeoutMs = 180_000,
): Promise<void> {
  const processes = Array.isArray(dependsOn) ? dependsOn : [dependsOn];
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const dead = (await Promise.all(processes.map(async (p) => (await isAlive(p)) ? undefined : p)))
      .find((p) => p !== undefined);
    if (dead) {
      throw new Error(`${dead.name} exited while waiting for ${what}:\n${logTail(dead.logPath)}`);
    }
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) {
      const logs = processes.map((p) => `--- ${p.name}:\n${logTail(p.logPath, 5)}`).join("\n");
      throw new WaitTimedOut(`timed out waiting for ${what}; the logs end:\n${logs}`);
    }
    await sleep(250);
  }
}
