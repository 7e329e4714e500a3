/**
 * The calls a person's commands make with their own kubeconfig (`undo`, the demo, the
 * dashboard), beside the controller's (api.ts): kept apart so that the controller's ClusterRole,
 * checked against api.ts's `accessOf`, grants none of them. cli/ reaches Kubernetes only
 * through kube/.
 */
import * as k8s from "@kubernetes/client-node";
import { customSetResources, type SetKind } from "../api/set-ref.ts";
import { toKubeError } from "./errors.ts";
import { type KubeObject, toWire } from "./wire-objects.ts";

export interface UserCalls {
  /** Creates any object the server serves, found by discovery from its apiVersion and kind. */
  create(object: KubeObject): Promise<KubeObject>;
  /** A JSON merge patch of any object, found as `create` finds it. */
  mergePatch(object: KubeObject): Promise<KubeObject>;
  /** Replaces a set whole, under the resourceVersion in `object.metadata`. */
  replaceSet(p: { kind: SetKind; object: KubeObject }): Promise<KubeObject>;
  /** The Events of one namespace that `fieldSelector` keeps, in wire form. */
  listEvents(p: { namespace: string; fieldSelector: string }): Promise<KubeObject[]>;
}

/** Every call through client-node; a failure names what was asked. */
export function userCalls(kc: k8s.KubeConfig): UserCalls {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const named = (object: KubeObject) =>
    `${object.kind} ${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`;
  const asked = async <T>(operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      throw toKubeError(err, operation);
    }
  };
  return {
    create(object) {
      return asked(
        `create ${named(object)}`,
        async () => toWire(await objects.create(object as k8s.KubernetesObject)),
      );
    },
    mergePatch(object) {
      return asked(`patch ${named(object)}`, async () =>
        toWire(
          await objects.patch(
            object as k8s.KubernetesObject,
            undefined,
            undefined,
            undefined,
            undefined,
            k8s.PatchStrategy.MergePatch,
          ),
        ));
    },
    replaceSet({ kind, object }) {
      const namespace = object.metadata?.namespace ?? "";
      const name = object.metadata?.name ?? "";
      const resource = customSetResources[kind];
      return asked(
        `replace ${kind} ${namespace}/${name}`,
        async () =>
          resource
            ? await custom.replaceNamespacedCustomObject({
              ...resource,
              namespace,
              name,
              body: object,
            })
            : toWire(
              await apps.replaceNamespacedDaemonSet({
                namespace,
                name,
                body: object as unknown as k8s.V1DaemonSet,
              }),
            ),
      );
    },
    listEvents({ namespace, fieldSelector }) {
      return asked(`list events in ${namespace}`, async () => {
        const list = await core.listNamespacedEvent({ namespace, fieldSelector });
        return list.items.map((event) => toWire(event));
      });
    },
  };
}
