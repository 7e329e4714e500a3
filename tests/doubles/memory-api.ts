/**
 * For tests: a `KubeApi` over an in-memory store, with the API server's rules that the
 * reconcile step leans on (resourceVersion and UID preconditions, AlreadyExists, NotFound)
 * and a count of writes. Route tests run on it without a network; integration tests use the
 * simulator instead.
 */
import type { ApiGroup, KubeApi, MergePatch } from "../../kube/api.ts";
import { KubeError } from "../../kube/errors.ts";
import { type KubeObject, wholeObject } from "../../kube/wire-objects.ts";
import { customSetResources, kruiseSetKind, type SetKind } from "../../api/set-ref.ts";

type Resource =
  | SetKind
  | "pods"
  | "nodes"
  | "controllerrevisions"
  | "events"
  | "jobs"
  | "leases"
  | "secrets"
  | "rolloutstatuses";

export interface MemoryApi extends KubeApi {
  /** Objects by resource; edit freely between calls. */
  objects: Record<Resource, Map<string, KubeObject>>;
  /** Writes the API accepted, e.g. `create pods`. */
  writes: string[];
  /** Tokens TokenReview accepts, with their user. */
  tokens: Map<string, { username: string; groups?: string[]; audiences?: string[] }>;
  put(resource: Resource, object: KubeObject): KubeObject;
  /** What discovery serves; drop `apps.edgeroll.dev` to stand for a cluster without the CRD. */
  apiGroups: ApiGroup[];
}

const key = (namespace: string | undefined, name: string | undefined) =>
  `${namespace ?? ""}/${name}`;

/** Equality terms only (`a=b,c=d`): what the snapshot read sends for matchLabels. */
function matches(object: KubeObject, labelSelector: string | undefined): boolean {
  if (!labelSelector) return true;
  const labels = object.metadata.labels ?? {};
  return labelSelector.split(",").every((term) => {
    const [k, v] = term.split("=");
    return labels[k] === v;
  });
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete result[k];
    else result[k] = mergePatch(result[k], v);
  }
  return result;
}

export function memoryApi(): MemoryApi {
  const objects = {
    advanceddaemonsets: new Map(),
    daemonsets: new Map(),
    [kruiseSetKind]: new Map(),
    pods: new Map(),
    nodes: new Map(),
    controllerrevisions: new Map(),
    jobs: new Map(),
    events: new Map(),
    leases: new Map(),
    secrets: new Map(),
    rolloutstatuses: new Map(),
  } as Record<Resource, Map<string, KubeObject>>;
  const writes: string[] = [];
  const tokens = new Map<string, { username: string; groups?: string[]; audiences?: string[] }>();
  let version = 0;
  let uid = 0;
  const apiGroups: ApiGroup[] = [
    { name: "apps", versions: ["apps/v1"] },
    { name: "apps.edgeroll.dev", versions: ["apps.edgeroll.dev/v1alpha1"] },
  ];
  // A custom resource is served while its group is listed (a test removes one to uninstall it).
  const served = (kind: SetKind) =>
    kind === "daemonsets" || apiGroups.some((g) => g.name === customSetResources[kind]?.group);

  // As kube-apiserver: an absent object's Status names it; a path nobody serves names nothing.
  const notFound = (what: string, name?: string) =>
    new KubeError(404, "NotFound", `${what} not found`, "memory", undefined, { objectName: name });
  const copy = <T>(o: T): T => structuredClone(o);
  const put = (resource: Resource, object: KubeObject) => {
    const stored = copy(object);
    stored.metadata.resourceVersion = String(++version);
    stored.metadata.uid ??= `uid-${++uid}`;
    objects[resource].set(key(stored.metadata.namespace, stored.metadata.name), stored);
    return copy(stored);
  };
  const get = (resource: Resource, namespace: string | undefined, name: string) => {
    const found = objects[resource].get(key(namespace, name));
    if (!found) throw notFound(`${resource} ${namespace}/${name}`, name);
    return found;
  };
  const create = (resource: Resource, namespace: string, body: KubeObject, dryRun = false) => {
    if (objects[resource].has(key(namespace, body.metadata.name))) {
      throw new KubeError(409, "AlreadyExists", `${body.metadata.name} already exists`, "memory");
    }
    // A dry run is admitted as the real create would be (this double validates nothing) and
    // stores nothing.
    if (dryRun) return copy({ ...body, metadata: { ...body.metadata, namespace } });
    writes.push(`create ${resource}`);
    return put(resource, { ...body, metadata: { ...body.metadata, namespace } });
  };
  const remove = (resource: Resource, namespace: string, name: string, expectedUid: string) => {
    const found = get(resource, namespace, name);
    if (found.metadata.uid !== expectedUid) {
      throw new KubeError(409, "Conflict", "Precondition failed: UID", "memory");
    }
    writes.push(`delete ${resource}`);
    objects[resource].delete(key(namespace, name));
  };
  const patch = (resource: Resource, namespace: string, name: string, body: MergePatch) => {
    const found = get(resource, namespace, name);
    const meta = (body.metadata ?? {}) as { resourceVersion?: string; uid?: string };
    if (
      meta.resourceVersion !== undefined && meta.resourceVersion !== found.metadata.resourceVersion
    ) {
      throw new KubeError(409, "Conflict", "the object has been modified", "memory");
    }
    if (meta.uid !== undefined && meta.uid !== found.metadata.uid) {
      throw new KubeError(409, "Conflict", "Precondition failed: UID", "memory");
    }
    writes.push(`patch ${resource}`);
    return put(resource, mergePatch(found, body) as KubeObject);
  };
  const replace = (resource: Resource, namespace: string, name: string, body: KubeObject) => {
    const found = get(resource, namespace, name);
    if (body.metadata.resourceVersion !== found.metadata.resourceVersion) {
      throw new KubeError(409, "Conflict", "the object has been modified", "memory");
    }
    writes.push(`update ${resource}`);
    return put(resource, {
      ...body,
      metadata: { ...body.metadata, namespace, name, uid: found.metadata.uid },
    });
  };
  const list = (resource: Resource, namespace?: string, labelSelector?: string) => ({
    items: [...objects[resource].values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .filter((o) => matches(o, labelSelector))
      .map(copy),
    resourceVersion: String(version),
  });

  return {
    objects,
    writes,
    tokens,
    put,
    apiGroups,
    getSet: ({ kind, namespace, name }) =>
      Promise.resolve().then(() => copy(get(kind, namespace, name))),
    // As kube-apiserver: a resource nobody serves answers 404 to a list.
    listSets: ({ kind }) =>
      Promise.resolve().then(() => {
        if (!served(kind)) throw notFound(`the server could not find the requested resource`);
        return list(kind);
      }),
    replaceSetStatus: ({ kind, object }) =>
      Promise.resolve().then(() => {
        const found = get(kind, object.metadata.namespace, object.metadata.name ?? "");
        if (object.metadata.resourceVersion !== found.metadata.resourceVersion) {
          throw new KubeError(409, "Conflict", "the object has been modified", "memory");
        }
        writes.push(`update ${kind}/status`);
        return put(kind, { ...found, status: object.status });
      }),
    patchSet: ({ kind, namespace, name, patch: body }) =>
      Promise.resolve().then(() => patch(kind, namespace, name, body)),
    getRolloutStatus: ({ namespace, name }) =>
      Promise.resolve().then(() => copy(get("rolloutstatuses", namespace, name))),
    listRolloutStatuses: () => Promise.resolve(list("rolloutstatuses")),
    createRolloutStatus: ({ namespace, body }) =>
      Promise.resolve().then(() => create("rolloutstatuses", namespace, body)),
    replaceRolloutStatus: ({ namespace, name, body }) =>
      Promise.resolve().then(() => replace("rolloutstatuses", namespace, name, body)),
    listPods: ({ namespace, labelSelector, nodeName, form = wholeObject }) => {
      const pods = list("pods", namespace, labelSelector);
      const onNode = (pod: KubeObject) =>
        nodeName === undefined || (pod.spec as { nodeName?: string })?.nodeName === nodeName;
      return Promise.resolve({ ...pods, items: pods.items.filter(onNode).map(form.keep) });
    },
    getPod: ({ namespace, name }) =>
      Promise.resolve().then(() => copy(get("pods", namespace, name))),
    listNodes: ({ labelSelector, name, form = wholeObject }) => {
      const nodes = list("nodes", undefined, labelSelector);
      const named = (n: KubeObject) => name === undefined || n.metadata.name === name;
      return Promise.resolve({ ...nodes, items: nodes.items.filter(named).map(form.keep) });
    },
    listRevisions: ({ namespace, labelSelector }) =>
      Promise.resolve(list("controllerrevisions", namespace, labelSelector)),
    createPod: ({ namespace, body, dryRun }) =>
      Promise.resolve().then(() => create("pods", namespace, body, dryRun)),
    deletePod: ({ namespace, name, uid }) =>
      Promise.resolve().then(() => remove("pods", namespace, name, uid)),
    patchPod: ({ namespace, name, patch: body }) =>
      Promise.resolve().then(() => patch("pods", namespace, name, body)),
    listCoreResources: () =>
      Promise.resolve(["nodes", "pods", "pods/resize", "pods/status", "secrets", "events"]),
    // The containers' resources by name, nothing else (as pods/resize does); validates nothing.
    resizePod: ({ namespace, name, patch: body }) =>
      Promise.resolve().then(() => {
        const found = get("pods", namespace, name);
        const spec = found.spec as { containers: { name: string; resources?: unknown }[] };
        const asked = ((body.spec ?? {}) as { containers?: { name: string; resources?: object }[] })
          .containers ?? [];
        writes.push("patch pods/resize");
        return put("pods", {
          ...found,
          spec: {
            ...spec,
            containers: spec.containers.map((c) => {
              const resources = asked.find((a) => a.name === c.name)?.resources;
              return resources ? mergePatch(c, { resources }) : c;
            }),
          },
        });
      }),
    patchPodStatus: ({ namespace, name, patch: body }) =>
      Promise.resolve().then(() => {
        const found = get("pods", namespace, name);
        const status = (found.status ?? {}) as { conditions?: { type: string }[] };
        const incoming = ((body.status ?? {}) as { conditions?: { type: string }[] }).conditions ??
          [];
        const conditions = (status.conditions ?? []).filter((c) =>
          !incoming.some((i) => i.type === c.type)
        );
        writes.push("patch pods/status");
        return put("pods", {
          ...found,
          status: { ...status, conditions: [...conditions, ...incoming] },
        });
      }),
    createRevision: ({ namespace, body, dryRun }) =>
      Promise.resolve().then(() => create("controllerrevisions", namespace, body, dryRun)),
    patchRevision: ({ namespace, name, patch: body }) =>
      Promise.resolve().then(() => patch("controllerrevisions", namespace, name, body)),
    deleteRevision: ({ namespace, name, uid }) =>
      Promise.resolve().then(() => remove("controllerrevisions", namespace, name, uid)),
    listJobs: ({ namespace, labelSelector }) =>
      Promise.resolve(list("jobs", namespace, labelSelector)),
    createJob: ({ namespace, body }) =>
      Promise.resolve().then(() => create("jobs", namespace, body)),
    deleteJob: ({ namespace, name, uid }) =>
      Promise.resolve().then(() => remove("jobs", namespace, name, uid)),
    createEvent: ({ namespace, body }) =>
      Promise.resolve().then(() => create("events", namespace, body)),
    // As kube-apiserver: a review that names audiences authenticates only a token meant for
    // one of them, and answers which.
    createTokenReview: ({ token, audiences }) => {
      const user = tokens.get(token);
      const tokenAudiences = user?.audiences ?? ["https://kubernetes.default.svc"];
      const matched = audiences?.length
        ? tokenAudiences.filter((a) => audiences.includes(a))
        : tokenAudiences;
      return Promise.resolve(
        user && matched.length > 0
          ? {
            authenticated: true,
            username: user.username,
            groups: user.groups ?? [],
            audiences: matched,
          }
          : {
            authenticated: false,
            error: user ? "token audiences do not match" : "token not recognised",
          },
      );
    },
    getVersion: () => Promise.resolve({ gitVersion: "v1.32.0-memory" }),
    listApiGroups: () => Promise.resolve(structuredClone(apiGroups)),
    listSecrets: ({ namespace, name, labelSelector }) => {
      const found = list("secrets", namespace, labelSelector);
      return Promise.resolve({
        ...found,
        items: found.items.filter((o) => o.metadata.name === name),
      });
    },
    getLease: ({ namespace, name }) =>
      Promise.resolve().then(() => copy(get("leases", namespace, name))),
    createLease: ({ namespace, body }) =>
      Promise.resolve().then(() => create("leases", namespace, body)),
    replaceLease: ({ namespace, name, body }) =>
      Promise.resolve().then(() => replace("leases", namespace, name, body)),
  };
}
