/**
 * kube-apiserver's Node authorizer and NodeRestriction admission, for what a node's own
 * credentials do with pods (edgeroll's edge agent, as YurtHub, uses them). A user
 * `system:node:<name>` in group `system:nodes` may
 * - list and watch pods only with the field selector `spec.nodeName=<name>`,
 * - get and delete only pods bound to it, and patch their status,
 * - get, list and watch Nodes, and update its own Node and Lease;
 * everything else is forbidden, in the API server's words (read off cluster/, Kubernetes 1.33).
 * The real authorizer grants nodes more (Services, Secrets of their pods, CSI objects, Events):
 * here those are refused, which is stricter, never looser. Other users are not checked
 * (ADR 0008: no RBAC).
 */
import type { Store } from "./store.ts";
import type { Verb } from "./faults.ts";
import type { ResourceType } from "./resources.ts";
import { ApiError } from "./status.ts";

export interface NodeUser {
  username: string;
  groups: string[];
}

export interface Request {
  verb: Verb;
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
  fieldSelector: string | null;
}

const nodePrefix = "system:node:";

/** The node a user acts as, or undefined for every other user. */
export function nodeOf(user: NodeUser | undefined): string | undefined {
  if (!user?.groups.includes("system:nodes") || !user.username.startsWith(nodePrefix)) {
    return undefined;
  }
  return user.username.slice(nodePrefix.length);
}

/** Throws the API server's 403 when `user` is a node and may not make `request`. */
export function authorizeNode(user: NodeUser | undefined, request: Request, store: Store): void {
  const node = nodeOf(user);
  if (node === undefined) return;
  const { verb, type, namespace, name, subresource } = request;
  const resource = subresource ? `${type.plural}/${subresource}` : type.plural;
  const qualified = type.group ? `${type.plural}.${type.group}` : type.plural;
  const scope = namespace === undefined
    ? "at the cluster scope"
    : `in the namespace "${namespace}"`;
  const denied = (why?: string) =>
    new ApiError(
      403,
      "Forbidden",
      `${name === undefined ? qualified : `${qualified} "${name}"`} is forbidden: User "${
        user!.username
      }" cannot ${verb} resource "${resource}" in API group "${type.group}" ${scope}${
        why ? `: ${why}` : ""
      }`,
    );
  const boundHere = () => {
    const pod = store.peek("pods", namespace, name ?? "");
    return (pod?.spec as { nodeName?: string } | undefined)?.nodeName === node;
  };

  if (type.storage === "pods") {
    if (verb === "list" || verb === "watch") {
      if (subresource === undefined && request.fieldSelector === `spec.nodeName=${node}`) return;
      throw denied("can only list/watch pods with spec.nodeName field selector");
    }
    if ((verb === "get" && subresource === undefined) || subresource === "status") {
      if ((verb === "get" || verb === "patch") && boundHere()) return;
      throw denied(`no relationship found between node '${node}' and this object`);
    }
    if (verb === "delete" && subresource === undefined) {
      if (boundHere()) return;
      throw new ApiError(
        403,
        "Forbidden",
        `pods "${name}" is forbidden: node "${node}" can only delete pods with spec.nodeName set to itself`,
      );
    }
    throw denied();
  }
  if (type.storage === "nodes") {
    if (verb === "get" || verb === "list" || verb === "watch") return;
    if ((verb === "update" || verb === "patch") && name === node) return;
    throw denied();
  }
  if (type.storage === "leases.coordination.k8s.io" && namespace === "kube-node-lease") {
    if (name === node && ["get", "update", "patch"].includes(verb)) return;
  }
  throw denied();
}
