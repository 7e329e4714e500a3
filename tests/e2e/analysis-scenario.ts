/**
 * Analysis checks (ADR 0055) against Prometheus itself (Debian's, on loopback) scraping an error
 * ratio per zone the scenario sets, and against an HTTP health page the scenario serves: a gate
 * that passes while the ratio stays low; a zone whose ratio rises after its pods update, stopped
 * and rolled back while the other zones finish; Prometheus stopped mid-rollout, the gate waiting
 * and the rollout stopped at the progress deadline, going on only once it answers again and an
 * operator resumes it; an HTTP gate the same; a host off the list refused before any pod is
 * touched.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { type AnalysisInput, type AnalysisStatus, credentialsLabel } from "../../api/analysis.ts";
import type { RolloutPlanInput } from "../../api/rollout-plan.ts";
import { withEdgeroll } from "../processes.ts";
import { freePort } from "../../cluster/processes.ts";
import {
  errorRatioMetric,
  type Exporter,
  type PrometheusProcess,
  startExporter,
  withPrometheus,
} from "../prometheus/prometheus.ts";
import { completeOn, image, setImage, setStatus } from "./edgeroll-scenarios.ts";
import { kubectlEdgeroll } from "./failure-scenario.ts";
import { eventually, type Kube } from "./kube.ts";
import {
  expected,
  imagesByNode,
  onDomains,
  planAt,
  plannedSet,
  type PlannedStatus,
} from "./plan-scenarios.ts";
import type { Scenario } from "./scenarios.ts";
import type { E2eTarget } from "./target.ts";

const zoneLabel = "topology.kubernetes.io/zone";

type AnalyzedStatus = PlannedStatus & {
  analysis?: AnalysisStatus;
  rolloutStop?: { revision: string; reason: string; at: string };
  progress?: { revision: string; updatedAvailable: number; at: string };
};

/**
 * The zone's error ratio, judged every second: at most 5% passes; `count` measurements pass a
 * gate, and bake a domain once its nodes are updated.
 */
const ratioCheck = (prometheus: string, count = 2) => ({
  name: "errors",
  prometheus: { address: prometheus, query: `${errorRatioMetric}{zone="{{domain}}"}` },
  successCondition: { max: 0.05 },
  intervalSeconds: 1,
  count,
});

/**
 * A set under `plan` with `analysis`, its rolling update one node at a time; `spec` and
 * `rollingUpdate` add to its own.
 */
function analyzedSet(
  ns: string,
  plan: RolloutPlanInput,
  analysis: AnalysisInput,
  spec = {},
  rollingUpdate = {},
) {
  const set = plannedSet(ns, plan);
  return {
    ...set,
    spec: {
      ...set.spec,
      ...spec,
      updateStrategy: {
        ...set.spec.updateStrategy,
        rollingUpdate: { ...set.spec.updateStrategy.rollingUpdate, ...rollingUpdate, analysis },
      },
    },
  };
}

/** A failure policy that spends no budget and stops the rollout at its progress deadline. */
const stopAtDeadline = { failurePolicy: { maxFailed: 0, stopOnProgressDeadline: true } };

/**
 * The progress deadline a set starts with when a scenario reads its gate from status before the
 * deadline stops it: longer than those reads may take (each gives up after 120 s), so the stop
 * cannot come first, however slow the API server; `cutDeadline` then brings the deadline down.
 */
const readingDeadlineSeconds = 600;

/** The progress deadline a scenario cuts to once it read what it waits for. */
const deadlineSeconds = 6;

/**
 * The set's progress deadline cut to `deadlineSeconds`: the rollout stops once that long has
 * passed since its clock started (the last updated pod available), at once if it has already.
 */
async function cutDeadline(kube: Kube, ns: string) {
  await kube.patch(ns, "advanceddaemonsets", "edge-agent", "merge", {
    spec: { progressDeadlineSeconds: deadlineSeconds },
  });
}

/**
 * `body` with an exporter and Prometheus scraping it, the nodes in zones and edgeroll serving with
 * the hosts it may reach: Prometheus's and `extraHosts`.
 */
async function withAnalysis(
  target: E2eTarget,
  kube: Kube,
  ns: string,
  body: (prometheus: PrometheusProcess, exporter: Exporter) => Promise<void>,
  extraHosts: string[] = [],
): Promise<void> {
  const exporter = await startExporter();
  try {
    for (const zone of ["zone-a", "zone-b", "zone-c"]) exporter.set(zone, 0.01);
    await withPrometheus(exporter, async (prometheus) => {
      await prometheus.scraped("zone-c", 0.01);
      const hosts = [prometheus.host, ...extraHosts].join(",");
      await onDomains(
        target,
        kube,
        ns,
        () => body(prometheus, exporter),
        (target, inner) =>
          withEdgeroll(target.kubeconfigPath, {
            serveArgs: ["--tick=1s", `--analysis-hosts=${hosts}`],
          }, inner),
      );
    });
  } finally {
    await exporter.stop();
  }
}

/** The set's status once `check` says it is there. */
function statusWhen(
  kube: Kube,
  ns: string,
  what: string,
  check: (s: AnalyzedStatus) => boolean,
  timeoutMs = 120_000,
): Promise<AnalyzedStatus> {
  return eventually(what, async () => {
    const s = await setStatus(kube, ns) as AnalyzedStatus;
    return check(s) ? s : undefined;
  }, timeoutMs);
}

const progressing = (s: AnalyzedStatus) => s.conditions?.find((c) => c.type === "Progressing");

/** The RolloutStopped condition while it is True (the rollout stopped), else undefined. */
const stoppedNow = (s: AnalyzedStatus) => {
  const c = s.conditions?.find((c) => c.type === "RolloutStopped");
  return c?.status === "True" ? c : undefined;
};

/** The standing of step 1's gate in `s`, while the plan analyzes and nothing stopped it. */
function gateBeforeStop(s: AnalyzedStatus) {
  const gate = s.analysis?.checks.find((c) => c.step === 1);
  return s.plan?.state === "Analyzing" && stoppedNow(s) === undefined ? gate : undefined;
}

/**
 * The status once the rollout stopped at its progress deadline (RolloutStopped, as Progressing),
 * no sooner than `deadlineSeconds` after its clock started, and the Warning Event that says so.
 */
async function stoppedAtDeadline(kube: Kube, ns: string, what: string) {
  const stopped = await statusWhen(kube, ns, what, (s) => stoppedNow(s) !== undefined);
  assertEquals(stoppedNow(stopped)?.reason, "ProgressDeadlineExceeded");
  assertEquals(progressing(stopped)?.reason, "ProgressDeadlineExceeded");
  assertEquals(stopped.plan?.state, "Stopped");
  const { rolloutStop, progress } = stopped;
  assertEquals(rolloutStop?.revision, stopped.daemonSetHash);
  assertEquals(progress?.revision, stopped.daemonSetHash);
  const waited = Date.parse(rolloutStop!.at) - Date.parse(progress!.at);
  assert(waited >= deadlineSeconds * 1000, `stopped ${waited} ms after the clock started`);
  await eventually("the stop's Warning Event", async () => {
    const events = await kube.eventsAbout(ns, "edge-agent");
    return events.some((e) => e.type === "Warning" && e.reason === "ProgressDeadlineExceeded") ||
      undefined;
  });
  return stopped;
}

export const analysisZonesScenario: Scenario = {
  name:
    "analysis over zones: zone-a's gate passes on Prometheus's low ratio; zone-b's ratio rises after its update, and zone-b is stopped and rolled back while zone-c finishes",
  async run(target, kube) {
    const ns = "e2e-analysis-zones";
    const [one, two, three] = target.nodes;
    await withAnalysis(target, kube, ns, async (prometheus, exporter) => {
      await kube.apply(analyzedSet(ns, {
        domainLabel: zoneLabel,
        steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%" }],
        // Four measurements bake each zone: time for zone-b's ratio to rise after its update.
      }, {
        checks: [ratioCheck(prometheus.url, 4)],
        background: ["errors"],
        onFailure: "Rollback",
      }));
      await completeOn(target, kube, ns, "v1");

      await setImage(kube, ns, "v2");
      // Step 1: zone-a's node, then its gate measures twice before zone-b is touched.
      const gated = await planAt(kube, ns, "Analyzing", 1);
      assertEquals(gated.plan?.domains.find((d) => d.name === "zone-a")?.updated, 1);
      assertEquals((await imagesByNode(kube, ns))[two], image("v1"), "zone-b waits for the gate");
      // zone-b's ratio rises as soon as its node runs v2.
      await eventually("zone-b's node on v2", async () => {
        const images = await imagesByNode(kube, ns);
        return images[two] === image("v2") || undefined;
      });
      exporter.set("zone-b", 0.4);
      const stopped = await statusWhen(
        kube,
        ns,
        "zone-b rolled back by its check, zone-c done",
        (s) =>
          s.plan?.state === "Stopped" &&
          s.plan.domains.find((d) => d.name === "zone-c")?.state === "Done",
      );
      assertEquals(
        stopped.plan?.domains.map((d) => [d.name, d.state]),
        [["zone-a", "Done"], ["zone-b", "RolledBack"], ["zone-c", "Done"]],
      );
      await eventually("zone-b's node back on v1", async () => {
        const images = await imagesByNode(kube, ns);
        return images[two] === image("v1") ? images : undefined;
      });
      assertEquals(
        await imagesByNode(kube, ns),
        expected(target, { [one]: "v2", [two]: "v1", [three]: "v2" }),
      );
      const failed = stopped.analysis?.checks.find((c) => c.phase === "Failed");
      assertEquals([failed?.check, failed?.domain], ["errors", "zone-b"]);
      assertEquals(failed?.measurements.at(-1)?.value, "0.4");
      const gate = stopped.analysis?.checks.find((c) => c.step === 1);
      assertEquals(gate, undefined, "step 1's gate passed and is no longer kept");
      const rolloutStopped = stopped.conditions?.find((c) => c.type === "RolloutStopped");
      assertEquals([rolloutStopped?.status, rolloutStopped?.reason], ["True", "AnalysisFailed"]);
      const events = await kube.eventsAbout(ns, "edge-agent");
      const told = events.filter((e) => e.reason === "AnalysisFailed");
      assert(
        told.some((e) => e.message?.includes("errors in zone-b failed")),
        JSON.stringify(told),
      );
      assert(events.some((e) => e.reason === "AnalysisPassed" && e.message?.includes("zone-a")));
      assert(events.some((e) => e.reason === "DomainRolledBack" && e.message?.includes("zone-b")));
      const shown = await kubectlEdgeroll(target.kubeconfigPath, [
        "status",
        `ads/${ns}/edge-agent`,
      ]);
      assertStringIncludes(shown, "errors in zone-b: Failed");
    });
  },
};

export const analysisInconclusiveScenario: Scenario = {
  name:
    "analysis inconclusive: Prometheus stopped mid-rollout leaves the gate waiting, then the rollout stopped at the progress deadline, no node updated after; answering again, it stays stopped until kubectl edgeroll resume, then the gate passes and the rollout finishes",
  async run(target, kube) {
    const ns = "e2e-analysis-down";
    const [one, two, three] = target.nodes;
    const cliRef = `ads/${ns}/edge-agent`;
    await withAnalysis(target, kube, ns, async (prometheus) => {
      await kube.apply(analyzedSet(
        ns,
        {
          domainLabel: zoneLabel,
          steps: [{ domains: 1, checks: ["errors"] }, { nodes: "100%" }],
        },
        { checks: [ratioCheck(prometheus.url)] },
        { progressDeadlineSeconds: readingDeadlineSeconds },
        stopAtDeadline,
      ));
      await completeOn(target, kube, ns, "v1");
      await prometheus.stop();
      await setImage(kube, ns, "v2");
      // The gate waits, saying why. A stopped rollout keeps no gate in its status: it is read
      // under a deadline it cannot outlast, and only then is the deadline cut.
      const waiting = await statusWhen(
        kube,
        ns,
        "the gate inconclusive",
        (s) => gateBeforeStop(s)?.phase === "Inconclusive",
      );
      const gate = gateBeforeStop(waiting);
      assertEquals(gate?.passed, 0);
      assertStringIncludes(gate?.measurements.at(-1)?.message ?? "", "unreachable");
      await cutDeadline(kube, ns);
      await stoppedAtDeadline(kube, ns, "the rollout stopped at the deadline");
      const onlyZoneA = expected(target, { [one]: "v2", [two]: "v1", [three]: "v1" });
      assertEquals(await imagesByNode(kube, ns), onlyZoneA, "no node updated past zone-a's");
      // What the gate said is kept in an Event, the stop having dropped it from the status.
      const events = await kube.eventsAbout(ns, "edge-agent");
      const told = events.filter((e) => e.reason === "AnalysisInconclusive");
      assert(
        told.some((e) =>
          e.message?.includes("step 1's check errors in zone-a decides nothing: unreachable")
        ),
        JSON.stringify(told),
      );

      // Prometheus answers again: the stop holds, no node is updated (the gate is measured again
      // only once resumed). 3 s: time enough for the gate's two measurements and zone-b's node.
      await prometheus.start();
      await prometheus.scraped("zone-b", 0.01);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const held = await setStatus(kube, ns) as AnalyzedStatus;
      assertEquals(stoppedNow(held)?.reason, "ProgressDeadlineExceeded", "still stopped");
      assertEquals(held.plan?.state, "Stopped");
      assertEquals(await imagesByNode(kube, ns), onlyZoneA, "nothing updated while stopped");

      const resumed = await kubectlEdgeroll(target.kubeconfigPath, ["resume", cliRef]);
      assertStringIncludes(resumed, "resumed");
      await completeOn(target, kube, ns, "v2");
      const done = await setStatus(kube, ns) as AnalyzedStatus;
      assertEquals(done.plan?.state, "Done");
      assertEquals(stoppedNow(done), undefined);
    });
  },
};

/** The bearer token the health page asks for, kept in a Secret the check names. */
const pageToken = "e2e-health-token";

/**
 * A health page on a fixed loopback port that can be taken down and brought back; it answers 401
 * without the token.
 */
function healthPage() {
  const port = freePort();
  let server: Deno.HttpServer | undefined;
  const page = {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    start() {
      server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, (req) => {
        if (req.headers.get("authorization") !== `Bearer ${pageToken}`) {
          return new Response("no token", { status: 401 });
        }
        const zone = new URL(req.url).pathname.split("/").pop();
        return Response.json({ zone, agent: { ok: true } });
      });
    },
    async stop() {
      await server?.shutdown();
      server = undefined;
    },
  };
  page.start();
  return page;
}

export const analysisHttpScenario: Scenario = {
  name:
    "analysis over HTTP: a health page's JSON field gates each zone with a token from a labelled Secret, waits while the Secret is unlabelled or the page does not answer, stops at the progress deadline, and resumed with both there, passes; a host off the list is InvalidSpec before any pod is touched",
  async run(target, kube) {
    const ns = "e2e-analysis-http";
    const [one, two] = target.nodes;
    const page = healthPage();
    try {
      await withAnalysis(target, kube, ns, async () => {
        const health = {
          name: "health",
          http: { url: `${page.url}/health/{{domain}}`, jsonPath: "agent.ok" },
          successCondition: { equals: "true" },
          intervalSeconds: 1,
          count: 2,
          secretRef: { name: "health-token" },
        };
        // The gate is read from status under a deadline it cannot outlast (a stopped rollout
        // keeps no gate in its status), then the deadline is cut while the page does not answer.
        await kube.apply(analyzedSet(
          ns,
          {
            domainLabel: zoneLabel,
            steps: [{ domains: 1, checks: ["health"] }, { nodes: "100%" }],
          },
          { checks: [health] },
          { progressDeadlineSeconds: readingDeadlineSeconds },
          stopAtDeadline,
        ));
        await completeOn(target, kube, ns, "v1");
        // The token's Secret, not yet labelled for the controller to read.
        await kube.apply({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "health-token", namespace: ns },
          data: { token: btoa(pageToken) },
        });

        // The gate waits, saying why: first the Secret's label, then a page that does not answer.
        const gateSays = (what: string, words: string) =>
          statusWhen(kube, ns, what, (s) => {
            const gate = gateBeforeStop(s);
            return gate?.phase === "Inconclusive" &&
              (gate.measurements.at(-1)?.message ?? "").includes(words);
          });
        await setImage(kube, ns, "v2");
        await gateSays(
          "the Secret unlabelled",
          "not labelled apps.edgeroll.dev/analysis-credentials",
        );
        await page.stop();
        await kube.run(["label", "secret", "-n", ns, "health-token", `${credentialsLabel}=true`]);
        const waiting = await gateSays("the page not answering", "unreachable");
        assertEquals(gateBeforeStop(waiting)?.passed, 0);
        const images = await imagesByNode(kube, ns);
        assertEquals([images[one], images[two]], [image("v2"), image("v1")]);
        // Still unreachable at the deadline: stopped, no node updated past zone-a's.
        await cutDeadline(kube, ns);
        await stoppedAtDeadline(kube, ns, "the rollout stopped at the deadline");
        const stoppedImages = await imagesByNode(kube, ns);
        assertEquals([stoppedImages[one], stoppedImages[two]], [image("v2"), image("v1")]);
        // The Event of the gate first deciding nothing, kept after the stop. Only that once: the
        // page's silence came while the gate was already Inconclusive, so the status read above
        // is what shows it.
        const told = (await kube.eventsAbout(ns, "edge-agent"))
          .filter((e) => e.reason === "AnalysisInconclusive");
        assert(
          told.some((e) =>
            e.message?.includes("step 1's check health in zone-a decides nothing") &&
            e.message.includes("not labelled")
          ),
          JSON.stringify(told),
        );

        // The page back and the rollout resumed: the gate measures again and passes.
        page.start();
        await kubectlEdgeroll(target.kubeconfigPath, ["resume", `ads/${ns}/edge-agent`]);
        await completeOn(target, kube, ns, "v2");
        assertEquals((await setStatus(kube, ns) as AnalyzedStatus).plan?.state, "Done");

        // A check whose host is not on --analysis-hosts: InvalidSpec, nothing replaced.
        await kube.patch(ns, "advanceddaemonsets", "edge-agent", "merge", {
          spec: {
            template: { spec: { containers: [{ name: "agent", image: image("v3") }] } },
            updateStrategy: {
              rollingUpdate: {
                analysis: {
                  checks: [{ ...health, http: { ...health.http, url: "http://127.0.0.1:9/x" } }],
                },
              },
            },
          },
        });
        const invalid = await statusWhen(
          kube,
          ns,
          "InvalidSpec",
          (s) =>
            s.conditions?.some((c) => c.type === "InvalidSpec" && c.status === "True") ?? false,
        );
        const message = invalid.conditions?.find((c) => c.type === "InvalidSpec")?.message ?? "";
        assertStringIncludes(message, "rollingUpdate.analysis.checks[0].http.url");
        assertStringIncludes(message, "127.0.0.1:9 is not among the hosts");
        assertEquals(
          Object.values(await imagesByNode(kube, ns)),
          target.nodes.map(() => image("v2")),
        );
      }, [page.host]);
    } finally {
      await page.stop();
    }
  },
};

export const analysisScenarios: Scenario[] = [
  analysisZonesScenario,
  analysisInconclusiveScenario,
  analysisHttpScenario,
];
