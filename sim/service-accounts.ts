/**
 * What kube-controller-manager's serviceaccount controller does: every namespace has a
 * `default` ServiceAccount, created when the namespace is and again if it is deleted.
 * Manifests and tests written against a real cluster rely on it (pods name it implicitly).
 */
import type { KubeObject, Store, StoreEvent } from "./store.ts";

const DEFAULT = "default";

function ensureDefault(store: Store, namespace: KubeObject): void {
  const name = namespace.metadata.name;
  if (namespace.metadata.deletionTimestamp) return;
  if (store.tryGet("serviceaccounts", name, DEFAULT)) return;
  store.create("serviceaccounts", {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: DEFAULT, namespace: name },
  });
}

/** Starts the controller; returns its stop function. */
export function serveDefaultServiceAccounts(store: Store): () => void {
  for (const namespace of store.list("namespaces").items) ensureDefault(store, namespace);
  // Deferred: a listener must not write while the store is still notifying about a write.
  const onEvent = (event: StoreEvent) => {
    if (event.resource === "namespaces" && event.type !== "DELETED") {
      queueMicrotask(() => ensureDefault(store, event.object));
    }
    if (
      event.resource === "serviceaccounts" && event.type === "DELETED" &&
      event.object.metadata.name === DEFAULT
    ) {
      const namespace = store.tryGet("namespaces", undefined, event.object.metadata.namespace!);
      if (namespace) queueMicrotask(() => ensureDefault(store, namespace));
    }
  };
  return store.subscribe(onEvent);
}
