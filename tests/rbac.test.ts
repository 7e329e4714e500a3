/**
 * Least privilege, checked both ways: the ClusterRoles in manifests/base allow everything the
 * controller (`accessOf` in kube/api.ts) and the relay (`watchedPaths`) ask of the API server,
 * and nothing they never ask. The edge agent has no role: it acts with its node's credentials,
 * and asks only what those allow.
 */
import { assertEquals } from "@std/assert";
import { parseAllDocuments } from "yaml";
import { accessOf, credentialMethods, kruiseAccessOf, leaseMethods } from "../kube/api.ts";
import { cacheAccess, kruiseCacheAccess } from "../kube/cache.ts";
import { kruiseWatchedPaths, watchedPaths } from "../relay/relay.ts";
import { leanClientAccess } from "../kube/lean-client.ts";

interface Rule {
  apiGroups: string[];
  resources: string[];
  resourceNames?: string[];
  verbs: string[];
}

const readRbac = (dir: string) =>
  Deno.readTextFile(new URL(`../manifests/${dir}/rbac.yaml`, import.meta.url));
const rbac = await readRbac("base");

/**
 * Every (group, resource, verb) a ClusterRole (or a Role) grants, as `group/resource:verb`, with
 * `@name` after the resource where the rule names its objects.
 */
function granted(role: string, yaml = rbac, kind = "ClusterRole"): string[] {
  const found = parseAllDocuments(yaml)
    .map((doc) => doc.toJS() as { kind: string; metadata: { name: string }; rules?: Rule[] })
    .find((o) => o.kind === kind && o.metadata.name === role);
  if (!found) throw new Error(`no ${kind} ${role} in rbac.yaml`);
  return found.rules!.flatMap((rule) =>
    rule.apiGroups.flatMap((group) =>
      rule.resources.flatMap((resource) =>
        (rule.resourceNames ?? [""]).flatMap((name) =>
          rule.verbs.map((verb) => `${group}/${resource}${name && `@${name}`}:${verb}`)
        )
      )
    )
  ).sort();
}

const asGranted = ({ group, resource, verb }: { group: string; resource: string; verb: string }) =>
  `${group}/${resource}:${verb}`;

const unique = (items: string[]) => [...new Set(items)].sort();

Deno.test("rbac: the controller's ClusterRole is exactly what kube/api.ts and its caches call, but its Lease", () => {
  const elsewhere = [...leaseMethods, ...credentialMethods];
  const needed = [
    ...Object.entries(accessOf).filter(([method]) => !elsewhere.includes(method as never))
      .flatMap(([, access]) => access),
    ...cacheAccess,
  ].map(asGranted);
  assertEquals(unique(granted("edgeroll-controller")), unique(needed));
});

Deno.test("rbac: the controller's Lease is a Role's, in its namespace, on that one Lease but its create", () => {
  const needed = leaseMethods.flatMap((method) => accessOf[method]).map((access) =>
    access.verb === "create"
      ? asGranted(access)
      : asGranted({ ...access, resource: `${access.resource}@edgeroll-controller` })
  );
  assertEquals(unique(granted("edgeroll-controller-lease", rbac, "Role")), unique(needed));
  const controller = Deno.readTextFileSync(
    new URL("../manifests/base/controller.yaml", import.meta.url),
  );
  assertEquals(controller.includes("--lease=$(POD_NAMESPACE)/edgeroll-controller"), true);
});

Deno.test("rbac: the analysis checks' credentials are a ClusterRole of its own, bound in no namespace by the base", () => {
  const needed = credentialMethods.flatMap((method) => accessOf[method]).map(asGranted);
  assertEquals(unique(granted("edgeroll-analysis-credentials")), unique(needed));
  const bindings = parseAllDocuments(rbac).map((doc) =>
    doc.toJS() as { kind: string; roleRef?: { name: string } }
  ).filter((o) => o.roleRef?.name === "edgeroll-analysis-credentials");
  assertEquals(bindings, []);
});

/** list and watch on each collection path: /api/v1/pods or /apis/<group>/<version>/<resource>. */
const listAndWatch = (paths: readonly string[]) =>
  paths.flatMap((path) => {
    const parts = path.split("/").filter(Boolean);
    const [group, resource] = parts[0] === "api" ? ["", parts[2]] : [parts[1], parts[3]];
    return ["list", "watch"].map((verb) => `${group}/${resource}:${verb}`);
  });

Deno.test("rbac: the relay's ClusterRole is list and watch on what it watches", () => {
  assertEquals(unique(granted("edgeroll-relay")), unique(listAndWatch(watchedPaths)));
});

Deno.test("rbac: the kruise-compat overlay adds exactly what --kruise asks, for the controller and the relay", async () => {
  const overlay = await readRbac("overlays/kruise-compat");
  const needed = [...Object.values(kruiseAccessOf).flat(), ...kruiseCacheAccess].map(asGranted);
  assertEquals(unique(granted("edgeroll-controller-kruise", overlay)), unique(needed));
  assertEquals(
    unique(granted("edgeroll-relay-kruise", overlay)),
    unique(listAndWatch(kruiseWatchedPaths)),
  );
});

Deno.test("rbac: the edge agent asks only what its node's own credentials may do", () => {
  // The Node authorizer and NodeRestriction (kube-apiserver, read off cluster/): a node lists
  // its own pods by field selector, reads, deletes and writes the status of pods bound to it,
  // and no DaemonSet. The
  // e2e scenario "an edge node's credentials reach its own pods only" shows the API server
  // holding that line on both targets.
  const needed = Object.values(leanClientAccess)
    .map(({ group, resource, verb }) => `${group}/${resource}:${verb}`);
  assertEquals(unique(needed), [
    "/pods/status:patch",
    "/pods:delete",
    "/pods:get",
    "/pods:list",
    "/pods:watch",
  ]);
});
