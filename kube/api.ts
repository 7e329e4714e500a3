/**
 * The Kubernetes calls edgeroll makes, one method each, with one object parameter, on
 * @kubernetes/client-node. `interceptApi` wraps any implementation with per-method
 * overrides (controller-runtime's interceptor client), so a test can make one call answer
 * 409 or 500 while the others reach the real server.
 */
import * as k8s from "@kubernetes/client-node";
import type { Access } from "./access.ts";
import { toKubeError } from "./errors.ts";
import {
  type CachedForm,
  type KubeList,
  type KubeObject,
  toWire,
  wholeObject,
} from "./wire-objects.ts";
import { readListBody } from "./list-items.ts";
import type { WatchFn } from "./watcher.ts";
import { decodeObject, decodeWatchEvent, WatchFrames } from "../api/protobuf.ts";
import { concatBytes } from "../lib/bytes.ts";
import { JsonLines } from "../lib/json-lines.ts";
import {
  type CustomSetResource,
  customSetResources,
  kruiseSetKind,
  setCollectionPath,
  type SetKind,
  type SetRef,
} from "../api/set-ref.ts";
import { rolloutStatusResource } from "../api/rollout-status.ts";

export type MergePatch = Record<string, unknown>;

export interface TokenReviewResult {
  authenticated: boolean;
  username?: string;
  groups?: string[];
  /** The audiences the token is valid for, among those the review asked about. */
  audiences?: string[];
  error?: string;
}

export interface KubeApi {
  getSet(p: SetRef): Promise<KubeObject>;
  /** Every set of one kind in every namespace (the tick's resync). */
  listSets(p: { kind: SetKind }): Promise<KubeList>;
  /**
   * PUT of a custom resource set's status subresource; `object.metadata.resourceVersion` is
   * the precondition.
   */
  replaceSetStatus(p: { kind: SetKind; object: KubeObject }): Promise<KubeObject>;
  /** JSON merge patch of the set itself (its annotations, for plain DaemonSets). */
  patchSet(p: SetRef & { patch: MergePatch }): Promise<KubeObject>;
  /** A plain DaemonSet's RolloutStatus (ADR 0039): same namespace and name as the DaemonSet. */
  getRolloutStatus(p: { namespace: string; name: string }): Promise<KubeObject>;
  /** Every RolloutStatus in every namespace (the tick's resync of plain DaemonSets). */
  listRolloutStatuses(p: Record<string, never>): Promise<KubeList>;
  createRolloutStatus(p: { namespace: string; body: KubeObject }): Promise<KubeObject>;
  /** PUT; `body.metadata.resourceVersion` is the precondition: the claim. */
  replaceRolloutStatus(
    p: { namespace: string; name: string; body: KubeObject },
  ): Promise<KubeObject>;
  /**
   * Pods of one namespace, or of all when `namespace` is absent; `nodeName` keeps those bound
   * to that node (field selector `spec.nodeName`).
   */
  listPods(
    p: { namespace?: string; labelSelector?: string; nodeName?: string; form?: CachedForm },
  ): Promise<KubeList>;
  getPod(p: { namespace: string; name: string }): Promise<KubeObject>;
  /** Every node, or those a label selector matches, or the one named `name` (a field selector). */
  listNodes(p: { labelSelector?: string; name?: string; form?: CachedForm }): Promise<KubeList>;
  listRevisions(p: { namespace: string; labelSelector?: string }): Promise<KubeList>;
  /**
   * With `dryRun`, admitted and validated by the server but not stored (`dryRun=All`). Answers
   * the created pod's apiVersion, kind and metadata only: nothing reads more of it.
   */
  createPod(p: { namespace: string; body: KubeObject; dryRun?: boolean }): Promise<KubeObject>;
  /** Deletes only the pod with this UID: a pod recreated under the same name is left alone. */
  deletePod(p: { namespace: string; name: string; uid: string }): Promise<void>;
  patchPod(p: { namespace: string; name: string; patch: MergePatch }): Promise<KubeObject>;
  /**
   * Strategic merge patch of `pods/resize` (Kubernetes 1.33): containers merge by name, only
   * their cpu and memory may change.
   */
  resizePod(p: { namespace: string; name: string; patch: MergePatch }): Promise<KubeObject>;
  /** Strategic merge patch of pod status: conditions merge by `type`, as kubelet's do. */
  patchPodStatus(p: { namespace: string; name: string; patch: MergePatch }): Promise<KubeObject>;
  createRevision(
    p: { namespace: string; body: KubeObject; dryRun?: boolean },
  ): Promise<KubeObject>;
  patchRevision(p: { namespace: string; name: string; patch: MergePatch }): Promise<KubeObject>;
  deleteRevision(p: { namespace: string; name: string; uid: string }): Promise<void>;
  /** Image pull Jobs (ADR 0034): listed by label, created, deleted with their pods. */
  listJobs(p: { namespace: string; labelSelector: string }): Promise<KubeList>;
  createJob(p: { namespace: string; body: KubeObject }): Promise<KubeObject>;
  /** Background propagation: the Job goes at once, the garbage collector takes its pods. */
  deleteJob(p: { namespace: string; name: string; uid: string }): Promise<void>;
  createEvent(p: { namespace: string; body: KubeObject }): Promise<KubeObject>;
  createTokenReview(p: { token: string; audiences?: string[] }): Promise<TokenReviewResult>;
  getVersion(p: Record<string, never>): Promise<{ gitVersion: string }>;
  /** Discovery (`GET /apis`): every API group the server serves, with its versions. */
  listApiGroups(p: Record<string, never>): Promise<ApiGroup[]>;
  /** Discovery (`GET /api/v1`): the names of the core resources served, subresources too. */
  listCoreResources(p: Record<string, never>): Promise<string[]>;
  /**
   * The Secret `name` in `namespace`, listed only if it carries `labelSelector` (an analysis
   * check's credentials, ADR 0055): a list, so RBAC grants it per namespace by binding.
   */
  listSecrets(p: { namespace: string; name: string; labelSelector: string }): Promise<KubeList>;
  /** The coordination.k8s.io Lease one replica holds to do the work (`serve --lease`). */
  getLease(p: { namespace: string; name: string }): Promise<KubeObject>;
  createLease(p: { namespace: string; body: KubeObject }): Promise<KubeObject>;
  /** PUT; `body.metadata.resourceVersion` is the precondition. */
  replaceLease(p: { namespace: string; name: string; body: KubeObject }): Promise<KubeObject>;
}

/** One entry of discovery's `APIGroupList`, as far as edgeroll reads it. */
export interface ApiGroup {
  name: string;
  /** `group/version` strings, e.g. `apps.edgeroll.dev/v1alpha1`. */
  versions: string[];
}

export type KubeMethod = keyof KubeApi;
type Param<M extends KubeMethod> = Parameters<KubeApi[M]>[0];
type Result<M extends KubeMethod> = ReturnType<KubeApi[M]>;

export type { Access } from "./access.ts";

const custom = (kind: SetKind) => (verb: string, subresource = ""): Access => {
  const { group, plural } = customSetResources[kind]!;
  return { group, resource: `${plural}${subresource}`, verb };
};
const ads = custom("advanceddaemonsets");
const kruise = custom(kruiseSetKind);
const apps = (resource: string, verb: string): Access => ({ group: "apps", resource, verb });
const rolloutStatus = (verb: string): Access => ({
  group: rolloutStatusResource.group,
  resource: rolloutStatusResource.plural,
  verb,
});
const core = (resource: string, verb: string): Access => ({ group: "", resource, verb });
const batch = (resource: string, verb: string): Access => ({ group: "batch", resource, verb });
const lease = (verb: string): Access => ({
  group: "coordination.k8s.io",
  resource: "leases",
  verb,
});

/**
 * What each method may ask of the API server, for both kinds of set where the kind is a
 * parameter. The controller's ClusterRole is checked against this table (tests/rbac.test.ts):
 * it must allow all of it and nothing more. `getVersion`, `listApiGroups` and
 * `listCoreResources` read `/version`, `/apis` and `/api/v1`, open to every authenticated user
 * (`system:discovery`).
 */
export const accessOf: Record<KubeMethod, Access[]> = {
  getSet: [ads("get"), apps("daemonsets", "get")],
  listSets: [ads("list"), apps("daemonsets", "list")],
  replaceSetStatus: [ads("update", "/status")],
  patchSet: [ads("patch"), apps("daemonsets", "patch")],
  getRolloutStatus: [rolloutStatus("get")],
  listRolloutStatuses: [rolloutStatus("list")],
  createRolloutStatus: [rolloutStatus("create")],
  replaceRolloutStatus: [rolloutStatus("update")],
  listPods: [core("pods", "list")],
  getPod: [core("pods", "get")],
  listNodes: [core("nodes", "list")],
  listRevisions: [apps("controllerrevisions", "list")],
  createPod: [core("pods", "create")],
  deletePod: [core("pods", "delete")],
  patchPod: [core("pods", "patch")],
  resizePod: [core("pods/resize", "patch")],
  patchPodStatus: [core("pods/status", "patch")],
  createRevision: [apps("controllerrevisions", "create")],
  patchRevision: [apps("controllerrevisions", "patch")],
  deleteRevision: [apps("controllerrevisions", "delete")],
  listJobs: [batch("jobs", "list")],
  createJob: [batch("jobs", "create")],
  deleteJob: [batch("jobs", "delete")],
  createEvent: [core("events", "create")],
  createTokenReview: [{ group: "authentication.k8s.io", resource: "tokenreviews", verb: "create" }],
  getVersion: [],
  listCoreResources: [],
  listApiGroups: [],
  listSecrets: [core("secrets", "list")],
  getLease: [lease("get")],
  createLease: [lease("create")],
  replaceLease: [lease("update")],
};

/**
 * The analysis checks' credentials (ADR 0055): granted by the ClusterRole
 * edgeroll-analysis-credentials, bound by a RoleBinding in each namespace whose sets' checks
 * read a Secret (the chart's `analysis.credentialNamespaces`), never cluster-wide.
 */
export const credentialMethods: readonly KubeMethod[] = ["listSecrets"];

/**
 * The Lease calls: granted by a Role in the controller's own namespace, on its own Lease, not by
 * the ClusterRole (a ClusterRole's update on leases could renew any node's; tests/rbac.test.ts).
 */
export const leaseMethods: readonly KubeMethod[] = ["getLease", "createLease", "replaceLease"];

/**
 * What the set methods also ask in Kruise compatibility mode (`serve --kruise`): granted by the
 * kruise-compat overlay's ClusterRole, not the base's (tests/rbac.test.ts).
 */
export const kruiseAccessOf: Partial<Record<KubeMethod, Access[]>> = {
  getSet: [kruise("get")],
  listSets: [kruise("list")],
  replaceSetStatus: [kruise("update", "/status")],
  patchSet: [kruise("patch")],
};

/** The HTTP verb each method uses, for the `API requests by verb` metric. */
export function verbOf(method: KubeMethod): string {
  return accessOf[method][0]?.verb ?? "get";
}

/** Replaces one method: gets the parameter and the wrapped method to call through to. */
export type Override<M extends KubeMethod> = (
  param: Param<M>,
  next: (param: Param<M>) => Result<M>,
) => Result<M>;

export type Overrides = { [M in KubeMethod]?: Override<M> };

/** Wraps `api` so each method named in `overrides` runs the override instead. */
export function interceptApi(api: KubeApi, overrides: Overrides): KubeApi {
  const wrapped = { ...bindAll(api) } as Record<KubeMethod, unknown>;
  for (const method of Object.keys(overrides) as KubeMethod[]) {
    const override = overrides[method] as Override<typeof method> | undefined;
    if (!override) continue;
    const next = api[method].bind(api) as (p: unknown) => Promise<unknown>;
    wrapped[method] = (param: unknown) =>
      (override as (p: unknown, n: typeof next) => unknown)(param, next);
  }
  return wrapped as unknown as KubeApi;
}

function bindAll(api: KubeApi): KubeApi {
  const bound: Partial<Record<KubeMethod, unknown>> = {};
  for (const method of Object.keys(accessOf) as KubeMethod[]) {
    bound[method] = (api[method] as (p: unknown) => unknown).bind(api);
  }
  return bound as KubeApi;
}

const mergePatch = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
const strategicMergePatch = k8s.setHeaderOptions(
  "Content-Type",
  k8s.PatchStrategy.StrategicMergePatch,
);

/** The custom resource a set kind is, or undefined for apps/v1 DaemonSets. */
function customResource(kind: SetKind): CustomSetResource | undefined {
  return customSetResources[kind];
}

const protobufType = "application/vnd.kubernetes.protobuf";
/**
 * The paths answered as protobuf where the server has it (api/protobuf.ts reads their kinds):
 * pods and nodes, collections and single objects, what a rollout reads and writes most. Sim, and
 * every custom resource, answer JSON.
 */
const protobufPath = /^\/api\/v1\/(namespaces\/[^/]+\/)?(pods|nodes)(\/[^/]+)?$/;
const jsonType = "application/json";

/** The Accept header for `path`: protobuf first where it is read, JSON always acceptable. */
function acceptFor(path: string, watch = false): string {
  if (!protobufPath.test(path)) return jsonType;
  return `${protobufType}${watch ? ";stream=watch" : ""}, ${jsonType}`;
}

function isProtobufAnswer(response: k8s.ResponseContext): boolean {
  return (response.headers["content-type"] ?? "").startsWith(protobufType);
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return concatBytes(chunks);
}

/**
 * Requests sent as plain JSON and answered as JSON or, for pods and nodes, as protobuf (about 62%
 * and 70% of their compact JSON: ADR 0040): client-node's request context, authentication and
 * transport, without its model classes. Those turn every object into class instances with
 * `Date`s, which `toWire` then undoes: four times the cost of `JSON.parse` on a 1,000-node list,
 * and every reconcile reads the whole fleet (measured in bench/controller.ts); 5,000 pod creations
 * spent about a second of CPU in them. A JSON list is read as it arrives, item by item
 * (kube/list-items.ts), each item given to `keep` at once; so is a protobuf one, each item
 * decoded only as far as the form's view reaches. A failure names the method and path it asked, so a wrong URL is
 * never mistaken for an absent resource.
 */
function kubeRequests(kc: k8s.KubeConfig) {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("no current cluster in the kubeconfig");
  const server = new k8s.ServerConfiguration(cluster.server, {});
  const http = new k8s.IsomorphicFetchHttpLibrary();
  /** The answer of a request that succeeded, its body not yet read. */
  const send = async (
    method: k8s.HttpMethod,
    path: string,
    query: Record<string, string | undefined>,
    options: { body?: unknown; accept?: string; signal?: AbortSignal } = {},
  ) => {
    const request = server.makeRequestContext(path, method);
    for (const [name, value] of Object.entries(query)) {
      if (value) request.setQueryParam(name, value);
    }
    request.setHeaderParam("Accept", options.accept ?? jsonType);
    if (options.body !== undefined) {
      request.setHeaderParam("Content-Type", jsonType);
      request.setBody(JSON.stringify(options.body));
    }
    if (options.signal) request.setSignal(options.signal);
    await kc.applySecurityAuthentication(request);
    const operation = `${method} ${path}`;
    let response;
    try {
      response = await http.send(request).toPromise();
    } catch (err) {
      throw toKubeError(err, operation);
    }
    if (response.httpStatusCode < 200 || response.httpStatusCode > 299) {
      // The shape client-node's own methods throw, read by the same toKubeError; a Status
      // answered as protobuf is read as its JSON.
      const stream = response.body.stream();
      const bytes = stream ? await readAll(stream) : new Uint8Array();
      let text = new TextDecoder().decode(bytes);
      if (isProtobufAnswer(response)) {
        try {
          text = JSON.stringify(decodeObject(bytes));
        } catch (err) {
          text = `a protobuf Status of ${bytes.length} bytes that could not be read: ${err}`;
        }
      }
      throw toKubeError(
        new k8s.ApiException(
          response.httpStatusCode,
          `HTTP ${response.httpStatusCode}`,
          text,
          response.headers,
        ),
        operation,
      );
    }
    return response;
  };
  return {
    send,
    async json<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
      return JSON.parse(await (await send(k8s.HttpMethod.GET, path, query)).body.text()) as T;
    },
    /**
     * A write of `body` (or none); of the object answered, its apiVersion, kind and metadata:
     * what a writer reads of it (its uid, its resourceVersion). Pods are answered as protobuf
     * where the server has it, and the rest of their bytes skipped unread.
     */
    async writeReadingMetadata(
      method: k8s.HttpMethod,
      path: string,
      query: Record<string, string | undefined>,
      body?: unknown,
    ): Promise<KubeObject> {
      const response = await send(method, path, query, { body, accept: acceptFor(path) });
      const stream = response.body.stream();
      if (!stream) throw toKubeError(new Error("an answer without a body"), `${method} ${path}`);
      const bytes = await readAll(stream);
      const { apiVersion, kind, metadata } = isProtobufAnswer(response)
        ? decodeObject(bytes, { metadata: true })
        : JSON.parse(new TextDecoder().decode(bytes));
      return { apiVersion, kind, metadata } as KubeObject;
    },
    async list(
      path: string,
      query: Record<string, string | undefined>,
      form: CachedForm,
    ): Promise<KubeList> {
      const response = await send(k8s.HttpMethod.GET, path, query, { accept: acceptFor(path) });
      const body = response.body.stream();
      if (!body) throw toKubeError(new Error("an answer without a body"), `GET ${path}`);
      try {
        const items: KubeObject[] = [];
        const resourceVersion = await readListBody(body, isProtobufAnswer(response), form, items);
        return { items, resourceVersion };
      } catch (err) {
        // A body cut short reads as a cut connection: the reader lists again, after its backoff.
        throw toKubeError(err, `GET ${path}`);
      }
    },
  };
}

/**
 * Watches as the caches ask for them (kube/watcher.ts's `startWatch` keeps them going): pods and
 * nodes as protobuf where the server has it, each event decoded as far as the `view` reaches;
 * everything else, and everything sim answers, as JSON lines. The end of the server's answer is
 * the watch's end; an abort of ours is no error.
 */
export function kubeWatch(kc: k8s.KubeConfig): WatchFn {
  const requests = kubeRequests(kc);
  return async (path, query, onLine, done, view = true) => {
    const controller = new AbortController();
    const asked = Object.fromEntries(
      Object.entries({ ...query, watch: true }).map(([k, v]) => [k, v === undefined ? v : `${v}`]),
    );
    let response: k8s.ResponseContext;
    try {
      response = await requests.send(k8s.HttpMethod.GET, path, asked, {
        accept: acceptFor(path, true),
        signal: controller.signal,
      });
    } catch (err) {
      done(err);
      return controller;
    }
    const read = async () => {
      const body = response.body.stream();
      if (!body) throw new Error("a watch answered without a body");
      if (isProtobufAnswer(response)) {
        const frames = new WatchFrames((frame) => {
          const event = decodeWatchEvent(frame, view);
          onLine(event.type, event.object);
        });
        for await (const chunk of body) frames.push(chunk);
        if (frames.partial) throw new Error("the watch ended within an event");
      } else {
        const lines = new JsonLines((value) => {
          const event = value as { type: string; object: unknown };
          onLine(event.type, event.object);
        });
        const decoder = new TextDecoder();
        for await (const chunk of body) lines.push(decoder.decode(chunk, { stream: true }));
        if (lines.partial) throw new Error("the watch ended within an event");
      }
    };
    read().then(() => done(null), (err) => {
      if (!controller.signal.aborted) done(toKubeError(err, `WATCH ${path}`));
    });
    return controller;
  };
}

/** The real thing: every method is one request through @kubernetes/client-node. */
export function clientNodeApi(kc: k8s.KubeConfig): KubeApi {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const batchApi = kc.makeApiClient(k8s.BatchV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const authn = kc.makeApiClient(k8s.AuthenticationV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const versionApi = kc.makeApiClient(k8s.VersionApi);
  const preconditions = (uid: string) => ({ body: { preconditions: { uid } } });
  const requests = kubeRequests(kc);
  const getJson = requests.json;
  const listObjects = (
    path: string,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
    form: CachedForm = wholeObject,
  ): Promise<KubeList> => requests.list(path, selectors, form);
  const inNamespace = (namespace: string, group: string, resource: string) =>
    `${group}/namespaces/${encodeURIComponent(namespace)}/${resource}`;
  const rolloutStatusPath = (namespace: string) => {
    const { group, version, plural } = rolloutStatusResource;
    return inNamespace(namespace, `/apis/${group}/${version}`, plural);
  };

  return {
    async getSet({ kind, namespace, name }) {
      const resource = customResource(kind);
      return resource
        ? await custom.getNamespacedCustomObject({ ...resource, namespace, name })
        : toWire(await apps.readNamespacedDaemonSet({ namespace, name }));
    },
    listSets({ kind }) {
      return listObjects(setCollectionPath(kind));
    },
    async replaceSetStatus({ kind, object }) {
      const resource = customResource(kind);
      if (!resource) throw new Error(`${kind} has no status subresource of edgeroll's`);
      return await custom.replaceNamespacedCustomObjectStatus({
        ...resource,
        namespace: object.metadata.namespace ?? "",
        name: object.metadata.name ?? "",
        body: object,
      });
    },
    async patchSet({ kind, namespace, name, patch }) {
      const resource = customResource(kind);
      return resource
        ? await custom.patchNamespacedCustomObject(
          { ...resource, namespace, name, body: patch },
          mergePatch,
        )
        : toWire(await apps.patchNamespacedDaemonSet({ namespace, name, body: patch }, mergePatch));
    },
    getRolloutStatus({ namespace, name }) {
      return getJson<KubeObject>(`${rolloutStatusPath(namespace)}/${encodeURIComponent(name)}`);
    },
    listRolloutStatuses() {
      const { group, version, plural } = rolloutStatusResource;
      return listObjects(`/apis/${group}/${version}/${plural}`);
    },
    async createRolloutStatus({ namespace, body }) {
      return await custom.createNamespacedCustomObject({
        ...rolloutStatusResource,
        namespace,
        body,
      });
    },
    async replaceRolloutStatus({ namespace, name, body }) {
      return await custom.replaceNamespacedCustomObject({
        ...rolloutStatusResource,
        namespace,
        name,
        body,
      });
    },
    listPods({ namespace, labelSelector, nodeName, form }) {
      return listObjects(
        namespace === undefined ? "/api/v1/pods" : inNamespace(namespace, "/api/v1", "pods"),
        { labelSelector, fieldSelector: nodeName && `spec.nodeName=${nodeName}` },
        form,
      );
    },
    async getPod({ namespace, name }) {
      return toWire(await core.readNamespacedPod({ namespace, name }));
    },
    listNodes({ labelSelector, name, form }) {
      return listObjects(
        "/api/v1/nodes",
        { labelSelector, fieldSelector: name && `metadata.name=${name}` },
        form,
      );
    },
    listRevisions({ namespace, labelSelector }) {
      return listObjects(
        inNamespace(namespace, "/apis/apps/v1", "controllerrevisions"),
        { labelSelector },
      );
    },
    createPod({ namespace, body, dryRun }) {
      return requests.writeReadingMetadata(
        k8s.HttpMethod.POST,
        inNamespace(namespace, "/api/v1", "pods"),
        { dryRun: dryRun ? "All" : undefined },
        body,
      );
    },
    async deletePod({ namespace, name, uid }) {
      await requests.writeReadingMetadata(
        k8s.HttpMethod.DELETE,
        `${inNamespace(namespace, "/api/v1", "pods")}/${encodeURIComponent(name)}`,
        {},
        preconditions(uid).body,
      );
    },
    async patchPod({ namespace, name, patch }) {
      return toWire(await core.patchNamespacedPod({ namespace, name, body: patch }, mergePatch));
    },
    async resizePod({ namespace, name, patch }) {
      return toWire(
        await core.patchNamespacedPodResize({ namespace, name, body: patch }, strategicMergePatch),
      );
    },
    async patchPodStatus({ namespace, name, patch }) {
      return toWire(
        await core.patchNamespacedPodStatus({ namespace, name, body: patch }, strategicMergePatch),
      );
    },
    async createRevision({ namespace, body, dryRun }) {
      return toWire(
        await apps.createNamespacedControllerRevision({
          namespace,
          body: body as unknown as k8s.V1ControllerRevision,
          ...(dryRun ? { dryRun: "All" } : {}),
        }),
      );
    },
    async patchRevision({ namespace, name, patch }) {
      return toWire(
        await apps.patchNamespacedControllerRevision({ namespace, name, body: patch }, mergePatch),
      );
    },
    async deleteRevision({ namespace, name, uid }) {
      await apps.deleteNamespacedControllerRevision({ namespace, name, ...preconditions(uid) });
    },
    listJobs({ namespace, labelSelector }) {
      return listObjects(inNamespace(namespace, "/apis/batch/v1", "jobs"), { labelSelector });
    },
    async createJob({ namespace, body }) {
      return toWire(await batchApi.createNamespacedJob({ namespace, body: body as k8s.V1Job }));
    },
    async deleteJob({ namespace, name, uid }) {
      await batchApi.deleteNamespacedJob({
        namespace,
        name,
        body: { preconditions: { uid }, propagationPolicy: "Background" },
      });
    },
    async createEvent({ namespace, body }) {
      return toWire(
        await core.createNamespacedEvent({ namespace, body: body as unknown as k8s.CoreV1Event }),
      );
    },
    async createTokenReview({ token, audiences }) {
      const review = await authn.createTokenReview({
        body: {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenReview",
          spec: { token, audiences },
        },
      });
      return {
        authenticated: review.status?.authenticated === true,
        username: review.status?.user?.username,
        groups: review.status?.user?.groups,
        audiences: review.status?.audiences,
        error: review.status?.error,
      };
    },
    async getVersion() {
      const info = await versionApi.getCode();
      return { gitVersion: info.gitVersion };
    },
    async listApiGroups() {
      const list = await getJson<{
        groups?: { name: string; versions?: { groupVersion: string }[] }[];
      }>("/apis");
      return (list.groups ?? []).map((g) => ({
        name: g.name,
        versions: (g.versions ?? []).map((v) => v.groupVersion),
      }));
    },
    async listCoreResources() {
      const list = await getJson<{ resources?: { name: string }[] }>("/api/v1");
      return (list.resources ?? []).map((r) => r.name);
    },
    listSecrets({ namespace, name, labelSelector }) {
      return listObjects(inNamespace(namespace, "/api/v1", "secrets"), {
        labelSelector,
        fieldSelector: `metadata.name=${name}`,
      });
    },
    getLease({ namespace, name }) {
      return getJson<KubeObject>(
        inNamespace(
          namespace,
          "/apis/coordination.k8s.io/v1",
          `leases/${encodeURIComponent(name)}`,
        ),
      );
    },
    async createLease({ namespace, body }) {
      return toWire(
        await coordination.createNamespacedLease({ namespace, body: body as k8s.V1Lease }),
      );
    },
    async replaceLease({ namespace, name, body }) {
      return toWire(
        await coordination.replaceNamespacedLease({ namespace, name, body: body as k8s.V1Lease }),
      );
    },
  };
}
