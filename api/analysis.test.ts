/**
 * Analysis checks' spec (ADR 0055): each problem with its field path, the placeholder escaped where
 * it goes, and the annotation Kruise's and OpenYurt's DaemonSets carry it in.
 */
import { assertEquals } from "@std/assert";
import {
  Analysis,
  analysisAnnotation,
  type AnalysisInput,
  expandCheck,
  hostIssues,
  hostPort,
  setAnalysisIssues,
} from "./analysis.ts";
import { readOpenYurtRollout } from "./openyurt.ts";
import type { DaemonSet } from "./kube-objects.ts";

const path = "spec.updateStrategy.rollingUpdate.analysis";
const planPath = "spec.updateStrategy.rollingUpdate.plan";
const plan = {
  domainLabel: "topology.kubernetes.io/zone",
  firstDomains: [],
  maxConcurrentDomains: 1,
  steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%", checks: ["latency"] }],
};

const issuesOf = (input: AnalysisInput, withPlan = true) =>
  setAnalysisIssues(Analysis.parse(input), withPlan ? plan : undefined, path, planPath)
    .map((i) => `${i.path}: ${i.message}`);

Deno.test("analysis: every problem named at its field, before any node is read", () => {
  const prometheus = { address: "http://prom:9090", query: 'up{zone="{{domain}}"}' };
  assertEquals(
    issuesOf({
      checks: [
        { name: "errors", prometheus, successCondition: { max: 0.05 } },
        { name: "errors", prometheus, http: { url: "http://x/" }, successCondition: {} },
        { name: "page", http: { url: "ftp://x/", jsonPath: "ok" } },
        { name: "range", prometheus, failureCondition: { min: 2, max: 1 } },
      ],
      background: ["nothing"],
    }),
    [
      `${path}.checks[1].name: is used twice`,
      `${path}.checks[1]: needs exactly one of prometheus and http`,
      `${path}.checks[1].successCondition: needs min, max or equals`,
      `${path}.checks[2].http.url: "ftp://x/" is no http(s) URL`,
      `${path}.checks[2].http.jsonPath: needs a successCondition or a failureCondition to judge the field`,
      `${path}.checks[3].failureCondition: min is above max`,
      `${path}.background[0]: no check is named nothing`,
      `${planPath}.steps[1].checks[0]: no check is named latency`,
    ],
  );
  // {{domain}} needs a plan, and a plan's step checks need checks defined.
  assertEquals(
    issuesOf({ checks: [{ name: "errors", prometheus, successCondition: { max: 1 } }] }, false),
    [`${path}.checks[0].prometheus.query: {{domain}} needs a rollout plan: its domainLabel says what a domain is`],
  );
  assertEquals(
    setAnalysisIssues(undefined, plan, path, planPath).map((i) => i.path),
    [`${planPath}.steps[0].checks`, `${planPath}.steps[1].checks`],
  );
});

Deno.test("analysis: hosts are host:port with the scheme's port, and only the listed ones pass", () => {
  assertEquals(hostPort("http://Prom.Monitoring/api"), "prom.monitoring:80");
  assertEquals(hostPort("https://prom:8443"), "prom:8443");
  assertEquals(hostPort("http://svc/{{domain}}/health"), "svc:80");
  assertEquals(hostPort("file:///etc/passwd"), undefined);
  const analysis = Analysis.parse({
    checks: [{ name: "up", http: { url: "http://10.0.0.1:8080/up" } }],
  });
  assertEquals(hostIssues(analysis, path, ["10.0.0.1:8080"]), []);
  assertEquals(hostIssues(analysis, path, []).map((i) => i.message), [
    "10.0.0.1:8080 is not among the hosts the controller may reach (--analysis-hosts: none)",
  ]);
});

Deno.test("analysis: the domain goes into a query as PromQL string text and into a URL escaped", () => {
  const [query, url] = Analysis.parse({
    checks: [
      {
        name: "q",
        prometheus: { address: "http://p:9090", query: 'x{zone="{{domain}}"}' },
        successCondition: { max: 1 },
      },
      { name: "u", http: { url: "http://s/{{domain}}?z={{domain}}" } },
    ],
  }).checks;
  assertEquals(expandCheck(query, 'a"b\\c'), {
    kind: "prometheus",
    address: "http://p:9090",
    query: 'x{zone="a\\"b\\\\c"}',
  });
  assertEquals(expandCheck(url, "a b/c"), { kind: "http", url: "http://s/a%20b%2Fc?z=a%20b%2Fc" });
});

Deno.test("analysis: an OpenYurt DaemonSet carries checks in an annotation; OTA does not roll back", () => {
  const yurt = (strategy: string, analysis: object): DaemonSet => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "agent",
      namespace: "edge",
      annotations: {
        "apps.openyurt.io/update-strategy": strategy,
        [analysisAnnotation]: JSON.stringify(analysis),
      },
    },
    spec: {
      selector: { matchLabels: { app: "agent" } },
      template: { metadata: { labels: { app: "agent" } }, spec: { containers: [] } },
      updateStrategy: { type: "OnDelete" },
    },
  });
  const checks = [{ name: "up", http: { url: "http://s:80/up" } }];
  const rolling = readOpenYurtRollout(yurt("AdvancedRollingUpdate", { checks }));
  assertEquals(rolling.managed && rolling.ok && rolling.rollout.analysis?.checks[0].name, "up");
  const ota = readOpenYurtRollout(yurt("OTA", { checks, onFailure: "Rollback" }));
  assertEquals(ota.managed && !ota.ok && ota.issues.map((i) => i.path), [
    `metadata.annotations[${analysisAnnotation}].onFailure`,
  ]);
});
