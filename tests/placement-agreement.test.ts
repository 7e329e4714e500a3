/**
 * sim's native DaemonSet controller and edgeroll's engine each decide where a daemon pod
 * belongs, in two deliberate copies (sim must not share the controller's logic, or it would
 * agree with it by construction). One table of cases, with upstream's answers, runs against
 * both, so the copies cannot drift apart: nodeSelector, required node affinity (every
 * operator, matchFields) and Gt/Lt read as `strconv.ParseInt(s, 10, 64)`.
 */
import { assertEquals } from "@std/assert";
import type { Node, NodeSelectorRequirement, PodSpec } from "../api/kube-objects.ts";
import { nodeShouldRunDaemonPod } from "../engine/should-run.ts";
import { matchesNodeAffinity } from "../sim/cluster/placement.ts";
import type { Node as SimNode, PodSpec as SimPodSpec } from "../sim/cluster/types.ts";

interface Case {
  what: string;
  labels: Record<string, string>;
  expressions?: NodeSelectorRequirement[];
  fields?: NodeSelectorRequirement[];
  nodeSelector?: Record<string, string>;
  /** Upstream's answer. */
  fits: boolean;
}

const gt = (value: string): NodeSelectorRequirement => ({
  key: "cores",
  operator: "Gt",
  values: [value],
});
const lt = (value: string): NodeSelectorRequirement => ({
  key: "cores",
  operator: "Lt",
  values: [value],
});

const cases: Case[] = [
  { what: "no constraint", labels: {}, fits: true },
  { what: "nodeSelector matches", labels: { zone: "a" }, nodeSelector: { zone: "a" }, fits: true },
  { what: "nodeSelector differs", labels: { zone: "b" }, nodeSelector: { zone: "a" }, fits: false },
  {
    what: "In",
    labels: { zone: "a" },
    expressions: [{ key: "zone", operator: "In", values: ["a", "b"] }],
    fits: true,
  },
  {
    what: "In, label absent",
    labels: {},
    expressions: [{ key: "zone", operator: "In", values: ["a"] }],
    fits: false,
  },
  {
    what: "NotIn, label absent",
    labels: {},
    expressions: [{ key: "zone", operator: "NotIn", values: ["a"] }],
    fits: true,
  },
  {
    what: "Exists",
    labels: { gpu: "" },
    expressions: [{ key: "gpu", operator: "Exists" }],
    fits: true,
  },
  {
    what: "DoesNotExist",
    labels: { gpu: "" },
    expressions: [{ key: "gpu", operator: "DoesNotExist" }],
    fits: false,
  },
  { what: "Gt", labels: { cores: "8" }, expressions: [gt("4")], fits: true },
  { what: "Gt, equal", labels: { cores: "4" }, expressions: [gt("4")], fits: false },
  { what: "Lt, negative", labels: { cores: "-3" }, expressions: [lt("-2")], fits: true },
  { what: "Gt, a sign", labels: { cores: "+8" }, expressions: [gt("4")], fits: true },
  { what: "Gt, trailing text", labels: { cores: "10abc" }, expressions: [gt("4")], fits: false },
  { what: "Gt, exponent", labels: { cores: "1e3" }, expressions: [gt("4")], fits: false },
  { what: "Gt, hexadecimal", labels: { cores: "0x10" }, expressions: [gt("4")], fits: false },
  { what: "Gt, empty value", labels: { cores: "" }, expressions: [gt("-1")], fits: false },
  { what: "Gt, spaces", labels: { cores: " 8" }, expressions: [gt("4")], fits: false },
  { what: "Gt, label absent", labels: {}, expressions: [gt("4")], fits: false },
  {
    what: "Gt, past 2^53 (exact in int64)",
    labels: { cores: "9007199254740993" },
    expressions: [gt("9007199254740992")],
    fits: true,
  },
  {
    what: "Gt, past int64",
    labels: { cores: "9223372036854775808" },
    expressions: [gt("4")],
    fits: false,
  },
  {
    what: "Gt, two values",
    labels: { cores: "8" },
    expressions: [{ key: "cores", operator: "Gt", values: ["4", "5"] }],
    fits: false,
  },
  {
    what: "matchFields metadata.name In",
    labels: {},
    fields: [{ key: "metadata.name", operator: "In", values: ["edge-1"] }],
    fits: true,
  },
  {
    what: "matchFields metadata.name NotIn",
    labels: {},
    fields: [{ key: "metadata.name", operator: "NotIn", values: ["edge-1"] }],
    fits: false,
  },
];

function specOf(c: Case): PodSpec {
  const term = {
    ...(c.expressions ? { matchExpressions: c.expressions } : {}),
    ...(c.fields ? { matchFields: c.fields } : {}),
  };
  return {
    containers: [{ name: "agent", image: "agent:1" }],
    ...(c.nodeSelector ? { nodeSelector: c.nodeSelector } : {}),
    ...(c.expressions || c.fields
      ? {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] },
          },
        },
      }
      : {}),
  };
}

for (const c of cases) {
  Deno.test(`placement, engine and sim agree with upstream: ${c.what}`, () => {
    const node: Node = { metadata: { name: "edge-1", labels: c.labels } };
    const spec = specOf(c);
    assertEquals(nodeShouldRunDaemonPod(node, spec).shouldRun, c.fits, "engine");
    // The same JSON, read through sim's own types.
    assertEquals(matchesNodeAffinity(spec as SimPodSpec, node as SimNode), c.fits, "sim");
  });
}
