/**
 * What the controller asks of Kubernetes, in its own words: read a set's snapshot, claim
 * its status, create and delete pods idempotently, record Events. Every call goes through
 * bounded retries (429/5xx) and is counted by verb for `/metrics`.
 */
import {
  accessOf,
  type KubeApi,
  type KubeMethod,
  type MergePatch,
  type TokenReviewResult,
  verbOf,
} from "./api.ts";
import {
  isAlreadyExists,
  isConflict,
  isNotFound,
  isObjectNotFound,
  KubeError,
  toKubeError,
} from "./errors.ts";
import type { KubeList, KubeObject } from "./wire-objects.ts";
import {
  customSetResources,
  kruiseSetKind,
  setKey,
  type SetKind,
  type SetRef,
} from "../api/set-ref.ts";
import { RecentMap } from "../lib/recent-map.ts";
import type { SnapshotCache } from "./cache.ts";
import { defaultRetryPolicy, type RetryPolicy, withRetry } from "./retry.ts";
import { type LabelSelector, labelSelectorString } from "./selector.ts";
import {
  hasLegacyStatusAnnotation,
  type SetRead,
  statusAsStored,
  writtenStatus,
} from "../api/written-status.ts";
import { rolloutStatusObject } from "../api/rollout-status.ts";
import {
  type ControllerRevision,
  type DaemonSet,
  LabelSelector as LabelSelectorSchema,
  type Node,
  type Pod,
} from "../api/kube-objects.ts";
import { labelSelectorIssues } from "../api/label-selector.ts";
import type { ContainerResize, Snapshot } from "../api/plan.ts";
import { type Job, type PullObjects, pullSetLabel, pullsToRead } from "../api/image-pull.ts";
import {
  asksPreDownload,
  rolloutStatusAnnotation,
  updatesInPlace,
} from "../api/advanced-daemonset.ts";
import { credentialsLabel } from "../api/analysis.ts";

/** One request as `/metrics` counts it. */
export interface RequestRecord {
  method: KubeMethod;
  verb: string;
  /** HTTP status, 0 when no answer came; 200 stands for every success. */
  status: number;
}

export interface KubeClientOptions {
  retry?: RetryPolicy;
  /** Called once per request sent (each retry included). */
  onRequest?: (record: RequestRecord) => void;
  /** `source.component` of the Events we write. */
  component?: string;
  /**
   * Nodes and pods read from watches once they are open (a long-running `serve`); built
   * from the client's own retried and counted calls.
   */
  cache?: (api: KubeApi) => SnapshotCache;
  /** Called when discovery first answers and whenever the served kinds of set change. */
  onServedChange?: (served: SetKind[]) => void;
  /**
   * Kruise compatibility mode (`serve --kruise`, ADR 0027): Kruise's DaemonSets are one of the
   * kinds reconciled once their CRD is served. Off, they are never read: kruise-manager may own
   * them.
   */
  kruise?: boolean;
}

export type CreateOutcome = "created" | "existed";
export type DeleteOutcome = "deleted" | "gone";

export interface EventNote {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** A snapshot as read, with the resourceVersion its pods are current at. */
export type SnapshotRead = Snapshot & { podsVersion: string };

/** Whether the API server can list with `selector` (absent counts: validation reports it). */
function listableSelector(selector: unknown): boolean {
  if (selector === undefined) return true;
  const parsed = LabelSelectorSchema.safeParse(selector);
  return parsed.success && labelSelectorIssues(parsed.data, "spec.selector").length === 0;
}

function observedPodsVersion(kind: SetKind, read: SetRead): string | undefined {
  const status = writtenStatus(kind, read) as { observedPodsVersion?: unknown } | undefined;
  return typeof status?.observedPodsVersion === "string" ? status.observedPodsVersion : undefined;
}

/**
 * What a status claim writes under and leaves: the set, and for a plain DaemonSet its
 * RolloutStatus (absent until the first claim creates it).
 */
export interface ClaimTarget {
  set: KubeObject;
  rolloutStatus?: KubeObject;
}

/** What the claim of a status planned from `snapshot` writes under. */
export function claimTarget(snapshot: SnapshotRead): ClaimTarget {
  return {
    set: snapshot.set as KubeObject,
    ...(snapshot.kind === "DaemonSet" && snapshot.rolloutStatus
      ? { rolloutStatus: snapshot.rolloutStatus as KubeObject }
      : {}),
  };
}

export class KubeClient {
  /** The raw calls, each retried and counted; for what the methods below do not cover. */
  readonly api: KubeApi;
  readonly cache: SnapshotCache | undefined;
  readonly #component: string;
  readonly #onServedChange: ((served: SetKind[]) => void) | undefined;
  #servedSeen: string | undefined;
  #podResize: Promise<boolean> | undefined;
  /** Kruise compatibility mode: Kruise's DaemonSets are reconciled (ADR 0027). */
  readonly kruise: boolean;
  #eventSeq = 0;
  /** The resourceVersion of each set as our last write of it left it (see `#wrote`). */
  readonly #written = new RecentMap<string, string>(50_000);
  /**
   * Each plain DaemonSet's RolloutStatus as our last claim left it, read instead of a GET where
   * the set itself comes from the Lease holder's caches: one replica works at a time, so it is the
   * newest unless another claimed since, and then our claim under its resourceVersion is lost and
   * the step reads afresh.
   */
  readonly #rolloutStatuses = new RecentMap<string, KubeObject>(50_000);

  constructor(api: KubeApi, options: KubeClientOptions = {}) {
    this.api = meteredApi(api, options.retry ?? defaultRetryPolicy, options.onRequest);
    this.#component = options.component ?? "edgeroll";
    this.cache = options.cache?.(this.api);
    this.#onServedChange = options.onServedChange;
    this.kruise = options.kruise ?? false;
  }

  /** The set, or undefined when it does not exist. */
  readSet(ref: SetRef): Promise<KubeObject | undefined> {
    return undefinedIfNotFound(this.api.getSet(ref));
  }

  /**
   * The set, its pods and ControllerRevisions (by the set's selector) and all nodes: never
   * per-object reads. Where the Lease holder's caches are open, each comes from them: the set
   * when its copy is at least as new as our own last write of it (else, or when `fresh`, a GET:
   * its resourceVersion is the claim's precondition, and a stale one only loses the claim), pods
   * when at least as new as those the set's last status was planned from
   * (`observedPodsVersion`). Otherwise one GET then three LISTs in parallel.
   */
  async readSnapshot(
    ref: SetRef,
    options: { fresh?: boolean } = {},
  ): Promise<SnapshotRead | undefined> {
    const key = setKey(ref);
    const cached = options.fresh ? undefined : this.cache?.set(ref, this.#written.get(key));
    const set = cached ?? await this.readSet(ref);
    if (!set) return undefined;
    // Where the set came from the Lease holder's caches, its RolloutStatus from our last claim.
    const rolloutStatus = ref.kind === "daemonsets"
      ? await this.#readRolloutStatus(ref, cached === undefined)
      : undefined;
    const read = { set, ...(rolloutStatus ? { rolloutStatus } : {}) };
    const spec = set.spec as { selector?: LabelSelector } | undefined;
    if (!listableSelector(spec?.selector)) {
      // Every list with it would be refused (400) and retried forever; plan() reads the same
      // selector and answers InvalidSpec with its field path, acting on nothing.
      return snapshotOf(ref.kind, read, { pods: [], nodes: [], revisions: [], podsVersion: "" });
    }
    const labelSelector = labelSelectorString(spec?.selector);
    const [pods, nodes, revisions] = await Promise.all([
      this.cache?.pods(ref.namespace, labelSelector, observedPodsVersion(ref.kind, read)) ??
        this.api.listPods({ namespace: ref.namespace, labelSelector }),
      this.cache?.nodes() ?? this.api.listNodes({}).then((l) => l.items),
      this.cache?.revisions(ref.namespace, labelSelector) ??
        this.api.listRevisions({ namespace: ref.namespace, labelSelector }),
    ]);
    // Trusted as read: plan() validates the set's spec; the others are the API server's own.
    const objects = {
      // Discovery of pods/resize only where a resize may be planned: an in-place set.
      ...(updatesInPlace(set.spec) && !await this.podResizeServed()
        ? { noPodResize: true as const }
        : {}),
      pods: pods.items as Pod[],
      nodes: nodes as Node[],
      revisions: revisions.items as ControllerRevision[],
      podsVersion: pods.resourceVersion,
      ...(pullsToRead(asksPreDownload(set.metadata.annotations), pods.items as Pod[])
        ? { pulls: await this.#readPulls(ref.namespace, set.metadata.uid ?? "") }
        : {}),
    };
    return snapshotOf(ref.kind, read, objects);
  }

  /** A plain DaemonSet's RolloutStatus as the API server has it; undefined while none exists. */
  readRolloutStatus(ref: { namespace: string; name: string }): Promise<KubeObject | undefined> {
    return this.#readRolloutStatus({ kind: "daemonsets", ...ref }, true);
  }

  /**
   * A plain DaemonSet's RolloutStatus: as our last claim left it, unless `fresh`, else a GET;
   * undefined while none exists. A 404 that names no object (the CRD is not installed) is thrown.
   */
  async #readRolloutStatus(ref: SetRef, fresh: boolean): Promise<KubeObject | undefined> {
    const key = setKey(ref);
    const remembered = fresh ? undefined : this.#rolloutStatuses.get(key);
    if (remembered) return remembered;
    try {
      return await this.api.getRolloutStatus({ namespace: ref.namespace, name: ref.name });
    } catch (err) {
      if (isObjectNotFound(err, ref.name)) return undefined;
      throw err;
    }
  }

  /** The set's image pull Jobs and their pods, read from the API server (never cached). */
  async #readPulls(namespace: string, setUid: string): Promise<PullObjects> {
    const labelSelector = `${pullSetLabel}=${setUid}`;
    const [jobs, pods] = await Promise.all([
      this.api.listJobs({ namespace, labelSelector }),
      this.api.listPods({ namespace, labelSelector }),
    ]);
    return { jobs: jobs.items as Job[], pods: pods.items as Pod[] };
  }

  /**
   * Writes `status` under a resourceVersion precondition: the lock of the reconcile step. A
   * `KubeError` with `isConflict` means another writer moved first.
   *
   * A custom resource set's status subresource is written under the set's resourceVersion. A
   * plain DaemonSet's status is its RolloutStatus's (ADR 0039), written under that object's
   * resourceVersion, or created (a create that finds one is a conflict): the DaemonSet
   * controller's status writes no longer break our claims, nor ours its. The first claim of a
   * DaemonSet that still carries the status annotation of an edgeroll before ADR 0039 removes it.
   */
  async claimStatus(
    kind: SetKind,
    target: ClaimTarget,
    status: Record<string, unknown>,
  ): Promise<ClaimTarget> {
    const { set } = target;
    const ref = { kind, namespace: set.metadata.namespace ?? "", name: set.metadata.name ?? "" };
    if (customSetResources[kind]) {
      const object = { ...set, status: statusAsStored(kind, status) };
      return { set: this.#wrote(ref, await this.api.replaceSetStatus({ kind, object })) };
    }
    const body = rolloutStatusObject(set, status, target.rolloutStatus) as KubeObject;
    let rolloutStatus: KubeObject;
    try {
      rolloutStatus = target.rolloutStatus
        ? await this.api.replaceRolloutStatus({ ...ref, body })
        : await this.api.createRolloutStatus({ namespace: ref.namespace, body });
    } catch (err) {
      // Created by another writer meanwhile, or deleted (its DaemonSet was recreated): either
      // way someone moved first, and the step reads again.
      if (!isConflict(err) && !isAlreadyExists(err) && !isNotFound(err)) throw err;
      this.#rolloutStatuses.delete(setKey(ref));
      if (isConflict(err)) throw err;
      const message = (err as Error).message;
      throw new KubeError(409, "Conflict", message, "claim rolloutstatuses", undefined, {
        cause: err,
      });
    }
    this.#rolloutStatuses.set(setKey(ref), rolloutStatus);
    if (hasLegacyStatusAnnotation(set)) {
      const patch = { metadata: { annotations: { [rolloutStatusAnnotation]: null } } };
      return { set: this.#wrote(ref, await this.api.patchSet({ ...ref, patch })), rolloutStatus };
    }
    return { set, rolloutStatus };
  }

  /** A JSON merge patch of the set itself (a rollback of its template, ADR 0035). */
  async patchSet(ref: SetRef, patch: Record<string, unknown>): Promise<void> {
    this.#wrote(ref, await this.api.patchSet({ ...ref, patch }));
  }

  /**
   * Remembers the resourceVersion of our own last write of a set: the cache's copy of it is read
   * only once at least that new (forgetting costs a GET, never a decision).
   */
  #wrote(ref: SetRef, written: KubeObject): KubeObject {
    const version = written.metadata?.resourceVersion;
    if (version) this.#written.set(setKey(ref), version);
    return written;
  }

  /** The pod, or undefined when it does not exist. */
  readPod(namespace: string, name: string): Promise<Pod | undefined> {
    return undefinedIfNotFound(this.api.getPod({ namespace, name }) as Promise<Pod>);
  }

  /** A create that finds the pod already there counts as done: names are deterministic. */
  createPod(namespace: string, pod: KubeObject): Promise<CreateOutcome> {
    return tolerateAlreadyExists(() => this.api.createPod({ namespace, body: pod }));
  }

  /**
   * Whether the API server would create these objects (a server-side dry run, nothing
   * stored): undefined when it would, else why not. Only a refusal of the objects themselves
   * (400, 422) is an answer; anything else (unreachable, throttled, forbidden) is thrown.
   * A name already taken means they passed admission: validation runs before storage.
   */
  async refusalOf(namespace: string, objects: KubeObject[]): Promise<string | undefined> {
    for (const body of objects) {
      const create = body.kind === "ControllerRevision"
        ? this.api.createRevision({ namespace, body, dryRun: true })
        : this.api.createPod({ namespace, body, dryRun: true });
      try {
        await create;
      } catch (err) {
        const error = toKubeError(err, `dry-run create ${body.kind}`);
        if (error.status === 409) continue;
        // The server's own words, without our operation's name in front.
        if (error.status === 400 || error.status === 422) {
          return error.message.slice(error.operation.length + 2);
        }
        throw error;
      }
    }
    return undefined;
  }

  /** Gone already, or replaced by a pod with another UID: either way ours is not there. */
  deletePod(namespace: string, name: string, uid: string): Promise<DeleteOutcome> {
    return tolerateGone(() => this.api.deletePod({ namespace, name, uid }));
  }

  async patchPod(namespace: string, name: string, patch: MergePatch): Promise<void> {
    await this.api.patchPod({ namespace, name, patch });
  }

  /** Resizes containers' cpu and memory in place (`pods/resize`). */
  async resizePod(namespace: string, name: string, containers: ContainerResize[]): Promise<void> {
    await this.api.resizePod({ namespace, name, patch: { spec: { containers } } });
  }

  /** Sets one pod condition, leaving the others (kubelet's) as they are. */
  async setPodCondition(
    namespace: string,
    name: string,
    condition: { type: string; status: string; message?: string; lastTransitionTime?: string },
    now: Date,
  ): Promise<void> {
    const stamped = { lastTransitionTime: isoSeconds(now), ...condition };
    await this.api.patchPodStatus({
      namespace,
      name,
      patch: { status: { conditions: [stamped] } },
    });
  }

  createRevision(namespace: string, revision: KubeObject): Promise<CreateOutcome> {
    return tolerateAlreadyExists(() => this.api.createRevision({ namespace, body: revision }));
  }

  async patchRevision(namespace: string, name: string, patch: MergePatch): Promise<void> {
    await this.api.patchRevision({ namespace, name, patch });
  }

  deleteRevision(namespace: string, name: string, uid: string): Promise<DeleteOutcome> {
    return tolerateGone(() => this.api.deleteRevision({ namespace, name, uid }));
  }

  /** A Job of the same name already there is the earlier attempt's: its name is deterministic. */
  createJob(namespace: string, job: KubeObject): Promise<CreateOutcome> {
    return tolerateAlreadyExists(() => this.api.createJob({ namespace, body: job }));
  }

  deleteJob(namespace: string, name: string, uid: string): Promise<DeleteOutcome> {
    return tolerateGone(() => this.api.deleteJob({ namespace, name, uid }));
  }

  /** A core/v1 Event about `involved` (the set, or one of its pods). */
  async recordEvent(involved: KubeObject, note: EventNote, now: Date): Promise<void> {
    const { namespace = "default", name = "", uid, resourceVersion } = involved.metadata;
    const stamp = isoSeconds(now);
    const body: KubeObject = {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: `${name}.${now.getTime().toString(16)}${(this.#eventSeq++).toString(16)}`,
        namespace,
      },
      involvedObject: {
        apiVersion: involved.apiVersion,
        kind: involved.kind,
        namespace,
        name,
        uid,
        resourceVersion,
      },
      reason: note.reason,
      message: note.message,
      type: note.type,
      source: { component: this.#component },
      reportingComponent: this.#component,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
    };
    await this.api.createEvent({ namespace, body });
  }

  /** Lists every set of a kind across namespaces; any failure, a 404 included, is thrown. */
  async listSets(kind: SetKind): Promise<KubeObject[]> {
    return (await this.api.listSets({ kind })).items;
  }

  /** The status the set's last claim wrote (`writtenStatus`), read from the API server. */
  async writtenStatusOf(ref: SetRef, set: KubeObject): Promise<unknown> {
    const rolloutStatus = ref.kind === "daemonsets"
      ? await this.#readRolloutStatus(ref, true)
      : undefined;
    return writtenStatus(ref.kind, { set, rolloutStatus });
  }

  /** Every plain DaemonSet's RolloutStatus, in every namespace. */
  async listRolloutStatuses(): Promise<KubeObject[]> {
    return (await this.api.listRolloutStatuses({})).items;
  }

  /**
   * The kinds of set the API server serves, learned from discovery (`GET /apis`): plain
   * DaemonSets always, AdvancedDaemonSets once their CRD is installed and established.
   * Asked on every call, so a CRD installed later is seen at the next tick.
   */
  async servedSetKinds(): Promise<SetKind[]> {
    const groups = await this.api.listApiGroups({});
    const isServed = (kind: SetKind) => {
      const { group, version } = customSetResources[kind]!;
      return groups.some((g) => g.name === group && g.versions.includes(`${group}/${version}`));
    };
    const served = (["advanceddaemonsets", "daemonsets", kruiseSetKind] as SetKind[]).filter(
      (kind) =>
        kind === "daemonsets" ||
        (kind === kruiseSetKind ? this.kruise && isServed(kind) : isServed(kind)),
    );
    const seen = served.join(",");
    if (seen !== this.#servedSeen) {
      this.#servedSeen = seen;
      this.cache?.setKindsServed(served);
      this.#onServedChange?.(served);
    }
    return served;
  }

  /**
   * Whether the API server serves `pods/resize` (Kubernetes 1.32 on), from discovery; asked once
   * per client (a server is not downgraded under a running controller), again after a failure.
   */
  podResizeServed(): Promise<boolean> {
    this.#podResize ??= this.api.listCoreResources({})
      .then((names) => names.includes("pods/resize"))
      .catch((err) => {
        this.#podResize = undefined;
        throw err;
      });
    return this.#podResize;
  }

  /**
   * An analysis check's credentials (ADR 0055): the Secret `name` in `namespace`, read only when
   * it carries `credentialsLabel`; throws with why not, in words for the check's measurement.
   */
  async readAnalysisCredentials(
    namespace: string,
    name: string,
  ): Promise<{ token?: string; username?: string; password?: string }> {
    let list: KubeList;
    try {
      list = await this.api.listSecrets({
        namespace,
        name,
        labelSelector: `${credentialsLabel}=true`,
      });
    } catch (err) {
      if (err instanceof KubeError && err.status === 403) {
        throw new Error(
          `the controller may not read Secrets in ${namespace}: bind the ClusterRole ` +
            `edgeroll-analysis-credentials there (the chart's analysis.credentialNamespaces)`,
        );
      }
      throw err;
    }
    const secret = list.items[0] as { data?: Record<string, string> } | undefined;
    if (!secret) {
      throw new Error(
        `Secret ${namespace}/${name} is absent or not labelled ${credentialsLabel}=true`,
      );
    }
    const text = (key: string) => {
      const value = secret.data?.[key];
      if (value === undefined) return {};
      const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
      return { [key]: new TextDecoder().decode(bytes) };
    };
    return { ...text("token"), ...text("username"), ...text("password") };
  }

  reviewToken(token: string, audiences?: string[]): Promise<TokenReviewResult> {
    return this.api.createTokenReview({ token, audiences });
  }

  /** Resolves when the API server answers `/version`; for `/readyz`. */
  async ping(): Promise<string> {
    return (await this.api.getVersion({})).gitVersion;
  }
}

/** The snapshot of a set of `kind`, as the planner reads it. */
function snapshotOf(
  kind: SetKind,
  { set, rolloutStatus }: { set: KubeObject; rolloutStatus?: KubeObject },
  objects: Omit<SnapshotRead, "kind" | "set">,
): SnapshotRead {
  if (kind === "daemonsets") {
    return {
      kind: "DaemonSet",
      set: set as DaemonSet,
      ...(rolloutStatus ? { rolloutStatus } : {}),
      ...objects,
    };
  }
  return {
    kind: kind === kruiseSetKind ? "KruiseDaemonSet" : "AdvancedDaemonSet",
    set,
    ...objects,
  };
}

function isoSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

async function undefinedIfNotFound<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function tolerateAlreadyExists(create: () => Promise<unknown>): Promise<CreateOutcome> {
  try {
    await create();
    return "created";
  } catch (err) {
    if (isAlreadyExists(err)) return "existed";
    throw err;
  }
}

async function tolerateGone(remove: () => Promise<void>): Promise<DeleteOutcome> {
  try {
    await remove();
    return "deleted";
  } catch (err) {
    if (isNotFound(err) || isConflict(err)) return "gone";
    throw err;
  }
}

/** Each method retried under `policy`, each try reported to `onRequest`. */
function meteredApi(
  api: KubeApi,
  policy: RetryPolicy,
  onRequest: ((record: RequestRecord) => void) | undefined,
): KubeApi {
  const metered: Partial<Record<KubeMethod, unknown>> = {};
  for (const method of Object.keys(accessOf) as KubeMethod[]) {
    const verb = verbOf(method);
    const call = (api[method] as (p: unknown) => Promise<unknown>).bind(api);
    metered[method] = (param: unknown) =>
      withRetry(`${verb} ${method}`, async () => {
        try {
          const result = await call(param);
          onRequest?.({ method, verb, status: 200 });
          return result;
        } catch (thrown) {
          const err = toKubeError(thrown, `${verb} ${method}`);
          onRequest?.({ method, verb, status: err.status });
          throw err;
        }
      }, policy);
  }
  return metered as KubeApi;
}
