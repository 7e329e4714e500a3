/**
 * What kube-controller-manager keeps in every namespace, created with the namespace and again
 * if deleted: the `default` ServiceAccount (its serviceaccount controller), which pods name
 * implicitly, and the `kube-root-ca.crt` ConfigMap (its root-ca-cert-publisher), which the e2e
 * framework waits for in each namespace it makes. sim serves plain HTTP and has no CA, so the
 * ConfigMap's `ca.crt` is empty (ADR 0008).
 */
import type { KubeObject, Store, StoreEvent } from "./store.ts";

interface NamespaceDefault {
  resource: string;
  name: string;
  object(namespace: string): KubeObject;
}

const defaults: NamespaceDefault[] = [
  {
    resource: "serviceaccounts",
    name: "default",
    object: (namespace) => ({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "default", namespace },
    }),
  },
  {
    resource: "configmaps",
    name: "kube-root-ca.crt",
    object: (namespace) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "kube-root-ca.crt",
        namespace,
        annotations: { "kubernetes.io/description": "Contains a CA bundle (none on sim)." },
      },
      data: { "ca.crt": "" },
    }),
  },
];

function ensureDefaults(store: Store, namespace: KubeObject): void {
  const name = namespace.metadata.name!;
  if (namespace.metadata.deletionTimestamp) return;
  for (const wanted of defaults) {
    if (!store.tryGet(wanted.resource, name, wanted.name)) {
      store.create(wanted.resource, wanted.object(name));
    }
  }
}

/** Starts the controller; returns its stop function. */
export function serveNamespaceDefaults(store: Store): () => void {
  for (const namespace of store.list("namespaces").items) ensureDefaults(store, namespace);
  // Deferred: a listener must not write while the store is still notifying about a write.
  const onEvent = (event: StoreEvent) => {
    if (event.resource === "namespaces" && event.type !== "DELETED") {
      queueMicrotask(() => ensureDefaults(store, event.object));
    }
    const removed = event.type === "DELETED" &&
      defaults.some((d) => d.resource === event.resource && d.name === event.object.metadata.name);
    if (removed) {
      const namespace = store.tryGet("namespaces", undefined, event.object.metadata.namespace!);
      if (namespace) queueMicrotask(() => ensureDefaults(store, namespace));
    }
  };
  return store.subscribe(onEvent);
}
