/**
 * Server-side printing: the `meta.k8s.io/v1` Table that `kubectl get` asks for, with the
 * columns kube-apiserver's printers give pods, nodes, daemonsets and namespaces, a CRD's
 * additionalPrinterColumns, and NAME/AGE for everything else.
 */
import type { KubeObject } from "./store.ts";
import type { PrinterColumn, ResourceType } from "./resources.ts";

export interface ColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

interface Printer {
  columns: ColumnDefinition[];
  cells(object: KubeObject, now: number): unknown[];
}

function column(name: string, type = "string", priority = 0, format = ""): ColumnDefinition {
  return { name, type, format, description: name, priority };
}

// deno-lint-ignore no-explicit-any
type Any = Record<string, any>;

const NAME = column("Name", "string", 0, "name");
const AGE = column("Age");

/** Ages as kubectl prints them: `45s`, `3m12s`, `17m`, `5h3m`, `2d4h`, `40d`, `3y`. */
export function humanAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

function age(object: Any, now: number): string {
  const created = object.metadata.creationTimestamp;
  return created ? humanAge(now - Date.parse(created)) : "<unknown>";
}

interface ContainerStatus {
  ready?: boolean;
  restartCount?: number;
  state?: { waiting?: { reason?: string }; terminated?: { reason?: string; exitCode?: number } };
}

/** The STATUS column of `kubectl get pods`, from phase, reasons and container states. */
function podStatus(pod: Any): string {
  let reason: string = pod.status?.reason ?? pod.status?.phase ?? "Unknown";
  const statuses: ContainerStatus[] = pod.status?.containerStatuses ?? [];
  let running = false;
  for (const s of [...statuses].reverse()) {
    if (s.state?.waiting?.reason) reason = s.state.waiting.reason;
    else if (s.state?.terminated?.reason) reason = s.state.terminated.reason;
    else if (s.state?.terminated) reason = `ExitCode:${s.state.terminated.exitCode ?? 0}`;
    else if (s.ready) running = true;
  }
  if (reason === "Completed" && running) reason = "Running";
  if (pod.metadata?.deletionTimestamp) reason = "Terminating";
  return reason;
}

const podPrinter: Printer = {
  columns: [
    NAME,
    column("Ready"),
    column("Status"),
    column("Restarts", "string"),
    AGE,
    column("IP", "string", 1),
    column("Node", "string", 1),
    column("Nominated Node", "string", 1),
    column("Readiness Gates", "string", 1),
  ],
  cells(pod: Any, now) {
    const statuses: ContainerStatus[] = pod.status?.containerStatuses ?? [];
    const total = pod.spec?.containers?.length ?? 0;
    const ready = statuses.filter((s) => s.ready).length;
    const restarts = statuses.reduce((sum, s) => sum + (s.restartCount ?? 0), 0);
    return [
      pod.metadata.name,
      `${ready}/${total}`,
      podStatus(pod),
      String(restarts),
      age(pod, now),
      pod.status?.podIP ?? "<none>",
      pod.spec?.nodeName ?? "<none>",
      pod.status?.nominatedNodeName ?? "<none>",
      "<none>",
    ];
  },
};

const nodePrinter: Printer = {
  columns: [
    NAME,
    column("Status"),
    column("Roles"),
    AGE,
    column("Version"),
    column("Internal-IP", "string", 1),
    column("External-IP", "string", 1),
    column("OS-Image", "string", 1),
    column("Kernel-Version", "string", 1),
    column("Container-Runtime", "string", 1),
  ],
  cells(node: Any, now) {
    const ready = (node.status?.conditions ?? []).find((c: Any) => c.type === "Ready");
    // As kube-apiserver's node printer: Not<Type> for any status but True (Unknown included);
    // "Unknown" only when there is no Ready condition at all.
    let status = ready === undefined ? "Unknown" : ready.status === "True" ? "Ready" : "NotReady";
    if (node.spec?.unschedulable) status += ",SchedulingDisabled";
    const roles = Object.keys(node.metadata.labels ?? {})
      .filter((l) => l.startsWith("node-role.kubernetes.io/"))
      .map((l) => l.slice("node-role.kubernetes.io/".length))
      .filter((r) => r.length > 0);
    const address = (type: string) =>
      (node.status?.addresses ?? []).find((a: Any) => a.type === type)?.address ?? "<none>";
    const info = node.status?.nodeInfo ?? {};
    return [
      node.metadata.name,
      status,
      roles.length > 0 ? roles.sort().join(",") : "<none>",
      age(node, now),
      info.kubeletVersion ?? "",
      address("InternalIP"),
      address("ExternalIP"),
      info.osImage ?? "<unknown>",
      info.kernelVersion ?? "<unknown>",
      info.containerRuntimeVersion ?? "<unknown>",
    ];
  },
};

function selectorText(selector: Any | undefined): string {
  if (!selector) return "<none>";
  const terms = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    if (e.operator === "Exists") terms.push(e.key);
    else if (e.operator === "DoesNotExist") terms.push(`!${e.key}`);
    else terms.push(`${e.key} ${e.operator.toLowerCase()} (${(e.values ?? []).join(",")})`);
  }
  return terms.length > 0 ? terms.join(",") : "<none>";
}

const daemonSetPrinter: Printer = {
  columns: [
    NAME,
    column("Desired", "integer"),
    column("Current", "integer"),
    column("Ready", "integer"),
    column("Up-to-date", "integer"),
    column("Available", "integer"),
    column("Node Selector"),
    AGE,
    column("Containers", "string", 1),
    column("Images", "string", 1),
    column("Selector", "string", 1),
  ],
  cells(ds: Any, now) {
    const s = ds.status ?? {};
    const nodeSelector = Object.entries(ds.spec?.template?.spec?.nodeSelector ?? {})
      .map(([k, v]) => `${k}=${v}`).join(",");
    const containers: Any[] = ds.spec?.template?.spec?.containers ?? [];
    return [
      ds.metadata.name,
      s.desiredNumberScheduled ?? 0,
      s.currentNumberScheduled ?? 0,
      s.numberReady ?? 0,
      s.updatedNumberScheduled ?? 0,
      s.numberAvailable ?? 0,
      nodeSelector || "<none>",
      age(ds, now),
      containers.map((c) => c.name).join(","),
      containers.map((c) => c.image).join(","),
      selectorText(ds.spec?.selector),
    ];
  },
};

const namespacePrinter: Printer = {
  columns: [NAME, column("Status"), AGE],
  cells: (ns: Any, now) => [ns.metadata.name, ns.status?.phase ?? "Active", age(ns, now)],
};

const leasePrinter: Printer = {
  columns: [NAME, column("Holder"), AGE],
  cells: (lease: Any, now) => [
    lease.metadata.name,
    lease.spec?.holderIdentity ?? "<none>",
    age(lease, now),
  ],
};

/** Core v1 and events.k8s.io/v1 Events share a printer: both shapes are read. */
const eventPrinter: Printer = {
  columns: [
    column("Last Seen"),
    column("Type"),
    column("Reason"),
    column("Object"),
    column("Subobject", "string", 1),
    column("Source", "string", 1),
    column("Message"),
    column("First Seen", "string", 1),
    column("Count", "integer", 1),
    column("Name", "string", 1, "name"),
  ],
  cells(e: Any, now) {
    const regarding = e.involvedObject ?? e.regarding ?? {};
    const last = e.lastTimestamp ?? e.deprecatedLastTimestamp ?? e.eventTime ??
      e.metadata.creationTimestamp;
    const first = e.firstTimestamp ?? e.deprecatedFirstTimestamp ?? e.eventTime ??
      e.metadata.creationTimestamp;
    const since = (t: string | undefined) => (t ? humanAge(now - Date.parse(t)) : "<unknown>");
    const source = e.source?.component ?? e.reportingComponent ?? e.reportingController ?? "";
    return [
      since(last),
      e.type ?? "",
      e.reason ?? "",
      `${String(regarding.kind ?? "").toLowerCase()}/${regarding.name ?? ""}`,
      regarding.fieldPath ?? "",
      source,
      e.message ?? e.note ?? "",
      since(first),
      e.count ?? e.deprecatedCount ?? 1,
      e.metadata.name,
    ];
  },
};

const fallbackPrinter: Printer = {
  columns: [NAME, AGE],
  cells: (object, now) => [object.metadata.name, age(object, now)],
};

const BUILT_IN_PRINTERS: Record<string, Printer> = {
  pods: podPrinter,
  nodes: nodePrinter,
  "daemonsets.apps": daemonSetPrinter,
  namespaces: namespacePrinter,
  events: eventPrinter,
  "leases.coordination.k8s.io": leasePrinter,
};

/**
 * Evaluates the JSONPath subset CRDs' printer columns use: `.a.b`, `.a[0]`, and
 * `.a[?(@.k=="v")].b`.
 */
/**
 * The value a printer column's JSONPath names. A wildcard (`[*]`) yields the first element:
 * kube-apiserver's table convertor prints only the first result of a column's path.
 */
export function evaluateJsonPath(object: unknown, path: string): unknown {
  const tokens = path.match(/\.[^.[]+|\[\?\(@\.[^=]+==\s*["'][^"']*["']\)\]|\[(\d+|\*)\]/g) ??
    [];
  let cursor: unknown = object;
  for (const token of tokens) {
    if (cursor === undefined || cursor === null) return undefined;
    if (token.startsWith(".")) {
      cursor = (cursor as Any)[token.slice(1)];
    } else if (token.startsWith("[?")) {
      const m = /\[\?\(@\.([^=]+?)\s*==\s*["']([^"']*)["']\)\]/.exec(token)!;
      cursor = Array.isArray(cursor)
        ? cursor.find((item) => String(item?.[m[1]]) === m[2])
        : undefined;
    } else {
      const index = token === "[*]" ? 0 : Number(token.slice(1, -1));
      cursor = Array.isArray(cursor) ? cursor[index] : undefined;
    }
  }
  return cursor;
}

function customPrinter(columns: PrinterColumn[]): Printer {
  const withAge = columns.length > 0 ? columns : [
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ];
  return {
    columns: [
      NAME,
      ...withAge.map((c) =>
        column(c.name, c.type === "date" ? "date" : c.type, c.priority ?? 0, c.format ?? "")
      ),
    ],
    cells: (object, now) => [
      object.metadata.name,
      ...withAge.map((c) => {
        const value = evaluateJsonPath(object, c.jsonPath);
        if (value === undefined || value === null) return null;
        if (c.type === "date") return humanAge(now - Date.parse(String(value)));
        return typeof value === "object" ? JSON.stringify(value) : value;
      }),
    ],
  };
}

function printerFor(type: ResourceType): Printer {
  if (type.custom) return customPrinter(type.custom.printerColumns);
  return BUILT_IN_PRINTERS[type.storage] ?? fallbackPrinter;
}

export type IncludeObject = "None" | "Metadata" | "Object";

/** The Table for a list (or one object) of `type`. */
export function toTable(
  type: ResourceType,
  objects: KubeObject[],
  options: {
    now: number;
    includeObject: IncludeObject;
    listMeta: Record<string, unknown>;
    omitColumns?: boolean;
  },
): Record<string, unknown> {
  const printer = printerFor(type);
  return {
    kind: "Table",
    apiVersion: "meta.k8s.io/v1",
    metadata: options.listMeta,
    ...(options.omitColumns ? {} : { columnDefinitions: printer.columns }),
    rows: objects.map((object) => ({
      cells: printer.cells(object, options.now),
      object: rowObject(object, options.includeObject),
    })),
  };
}

function rowObject(object: KubeObject, include: IncludeObject): unknown {
  if (include === "None") return undefined;
  if (include === "Object") return object;
  return {
    kind: "PartialObjectMetadata",
    apiVersion: "meta.k8s.io/v1",
    metadata: object.metadata,
  };
}
