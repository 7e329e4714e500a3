/** Small kubectl-based helpers the end-to-end scenarios share. */
import { eventually as eventuallyAt } from "../../lib/eventually.ts";
import { kubectl, kubectlJson } from "../../cluster/kubectl.ts";
import { edgerollCrdFileNames } from "../../cli/crd-command.ts";
import { writtenStatus } from "../../api/written-status.ts";
import type { SetKind } from "../../api/set-ref.ts";
import type { KubeObject } from "../../kube/wire-objects.ts";

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface Pod {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; controller?: boolean }[];
  };
  spec: {
    nodeName?: string;
    containers: { name: string; image: string; resources?: Resources }[];
    readinessGates?: { conditionType: string }[];
  };
  status?: {
    phase?: string;
    conditions?: (Condition & { lastTransitionTime?: string })[];
    qosClass?: string;
    containerStatuses?: {
      name: string;
      image: string;
      imageID: string;
      ready: boolean;
      restartCount: number;
      resources?: Resources;
      allocatedResources?: Record<string, string>;
    }[];
  };
}

/** A container's requests and limits, as the API server prints them. */
export interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export interface Node {
  metadata: { name: string };
  spec: { taints?: { key: string; effect: string }[] };
  status?: { conditions?: Condition[] };
}

export interface DaemonSetStatus {
  metadata: { generation: number };
  status: {
    observedGeneration?: number;
    desiredNumberScheduled: number;
    updatedNumberScheduled?: number;
    numberReady: number;
  };
}

export function conditionStatus(
  object: { status?: { conditions?: Condition[] } },
  type: string,
): string | undefined {
  return object.status?.conditions?.find((c) => c.type === type)?.status;
}

/**
 * `lib/eventually.ts` as the e2e scenarios wait: up to 90 s (a real control plane is slower than
 * sim), every 250 ms, asking again when the API answers an error meanwhile.
 */
export function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 90_000,
): Promise<T> {
  return eventuallyAt(what, check, { timeoutMs, intervalMs: 250, retryErrors: true });
}

const edgerollCrdFiles = edgerollCrdFileNames.flatMap((name) => [
  "-f",
  new URL(`../../manifests/crd/${name}`, import.meta.url).pathname,
]);

/** The arguments of `kubectl --namespace NS patch RESOURCE NAME --type=TYPE -p PATCH`. */
export function patchArgs(
  namespace: string,
  resource: string,
  name: string,
  type: "merge" | "json" | "strategic",
  patch: unknown,
): string[] {
  return [
    "--namespace",
    namespace,
    "patch",
    resource,
    name,
    `--type=${type}`,
    "-p",
    JSON.stringify(patch),
  ];
}

/** `kubectl --namespace NS get pods -l SELECTOR`'s arguments. */
function podsArgs(namespace: string, selector: string): string[] {
  return ["--namespace", namespace, "get", "pods", "-l", selector];
}

export interface KubeEvent {
  type: string;
  reason: string;
  message?: string;
}

export class Kube {
  constructor(readonly kubeconfigPath: string) {}

  run(args: string[], stdin?: string): Promise<string> {
    return kubectl(this.kubeconfigPath, args, stdin);
  }

  json<T>(args: string[]): Promise<T> {
    return kubectlJson<T>(this.kubeconfigPath, args);
  }

  /**
   * A set's rollout status as the controller last wrote it, read with kubectl as a user reads it:
   * the set, and for a plain DaemonSet its RolloutStatus (`kubectl get rolloutstatus NAME`).
   */
  async writtenStatus(kind: SetKind, resource: string, namespace: string, name: string) {
    const set = await this.json<KubeObject>(["--namespace", namespace, "get", resource, name]);
    const found = kind === "daemonsets"
      ? await this.json<{ items: KubeObject[] }>([
        "--namespace",
        namespace,
        "get",
        "rolloutstatuses",
        `--field-selector=metadata.name=${name}`,
      ])
      : { items: [] };
    return writtenStatus(kind, { set, rolloutStatus: found.items[0] });
  }

  /** `kubectl patch` of one object, as a user types it. */
  patch(
    namespace: string,
    resource: string,
    name: string,
    type: "merge" | "json" | "strategic",
    patch: unknown,
  ): Promise<string> {
    return this.run(patchArgs(namespace, resource, name, type, patch));
  }

  /** The Events about an object of the namespace, as `kubectl get events` lists them. */
  async eventsAbout(namespace: string, name: string): Promise<KubeEvent[]> {
    return (await this.json<{ items: KubeEvent[] }>([
      "--namespace",
      namespace,
      "get",
      "events",
      "--field-selector",
      `involvedObject.name=${name}`,
    ])).items;
  }

  apply(object: unknown): Promise<string> {
    return this.run(["apply", "-f", "-"], JSON.stringify(object));
  }

  /** Applies edgeroll's CRDs and waits until the API server serves them. */
  async installCrd(): Promise<void> {
    await this.run(["apply", ...edgerollCrdFiles]);
    await this.run(["wait", "--for=condition=Established", "--timeout=60s", ...edgerollCrdFiles]);
  }

  async createNamespace(name: string): Promise<void> {
    await this.apply({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }

  async pods(namespace: string, selector: string): Promise<Pod[]> {
    return (await this.json<{ items: Pod[] }>(podsArgs(namespace, selector))).items;
  }

  /** Jobs of a namespace matching `selector`, as `kubectl get jobs -l` lists them. */
  async jobs<T>(namespace: string, selector: string): Promise<T[]> {
    return (await this.json<{ items: T[] }>([
      "--namespace",
      namespace,
      "get",
      "jobs",
      "-l",
      selector,
    ]))
      .items;
  }

  /**
   * Watches a namespace's pods matching `selector` (`kubectl get pods -w -o json`, as a user
   * watches them), calling `seen` with each pod as each event shows it, until `stop`, which ends
   * the kubectl it started and waits for it.
   */
  watchPods(
    namespace: string,
    selector: string,
    seen: (pod: Pod) => void,
  ): { stop(): Promise<void> } {
    const child = new Deno.Command(Deno.env.get("KUBECTL") ?? "kubectl", {
      args: [
        "--kubeconfig",
        this.kubeconfigPath,
        ...podsArgs(namespace, selector),
        "--watch",
        "-o",
        "json",
      ],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const read = (async () => {
      let text = "";
      for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        // kubectl prints each object indented, its closing brace alone at the line's start.
        for (let end = text.search(/^\}$/m); end >= 0; end = text.search(/^\}$/m)) {
          seen(JSON.parse(text.slice(0, end + 1)) as Pod);
          text = text.slice(end + 1);
        }
      }
    })();
    return {
      async stop() {
        try {
          child.kill("SIGTERM");
        } catch { /* already ended */ }
        await child.status;
        await read;
      },
    };
  }

  node(name: string): Promise<Node> {
    return this.json<Node>(["get", "node", name]);
  }

  /** Waits until the node's Ready condition has `status` (a string such as "True"). */
  async nodeReady(name: string, wanted: (status: string | undefined) => boolean): Promise<Node> {
    return await eventually(`node ${name} readiness`, async () => {
      const node = await this.node(name);
      return wanted(conditionStatus(node, "Ready")) ? node : undefined;
    });
  }
}
