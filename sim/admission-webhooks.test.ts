import { assertEquals } from "@std/assert";
import { ruleMatches } from "./admission-webhooks.ts";
import { builtInTypes, type ResourceType } from "./resources.ts";

const type = (plural: string): ResourceType => builtInTypes().find((t) => t.plural === plural)!;
const rule = (resources: string[], extra: Record<string, unknown> = {}) => ({
  apiGroups: ["*"],
  apiVersions: ["*"],
  operations: ["CREATE", "UPDATE"],
  resources,
  ...extra,
});

Deno.test("admission rules: a resource, its subresources and wildcards, as kube-apiserver matches them", () => {
  const pods = { operation: "UPDATE", type: type("pods") };
  const status = { ...pods, subresource: "status" };
  assertEquals(ruleMatches(rule(["pods"]), pods), true);
  assertEquals(ruleMatches(rule(["pods"]), status), false, "a subresource is named on its own");
  assertEquals(ruleMatches(rule(["pods/status"]), status), true);
  assertEquals(ruleMatches(rule(["*"]), status), false, "* is every resource, no subresource");
  assertEquals(ruleMatches(rule(["*/status"]), status), true);
  assertEquals(ruleMatches(rule(["pods/*"]), status), true);
  assertEquals(ruleMatches(rule(["*/*"]), status), true);
  assertEquals(ruleMatches(rule(["pods"], { operations: ["CREATE"] }), pods), false);
  assertEquals(ruleMatches(rule(["pods"], { apiGroups: ["apps"] }), pods), false);
  assertEquals(ruleMatches(rule(["pods"], { apiVersions: ["v2"] }), pods), false);
  assertEquals(ruleMatches(rule(["pods"], { apiVersions: ["v2"] }), pods, "v2"), true);
});

Deno.test("admission rules: scope Cluster and Namespaced", () => {
  const nodes = { operation: "CREATE", type: type("nodes") };
  const pods = { operation: "CREATE", type: type("pods") };
  assertEquals(ruleMatches(rule(["*"], { scope: "Cluster" }), nodes), true);
  assertEquals(ruleMatches(rule(["*"], { scope: "Cluster" }), pods), false);
  assertEquals(ruleMatches(rule(["*"], { scope: "Namespaced" }), pods), true);
  assertEquals(ruleMatches(rule(["*"], { scope: "Namespaced" }), nodes), false);
});
