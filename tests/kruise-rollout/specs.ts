/**
 * Reading Kruise Rollout's e2e binary (Ginkgo v1, which writes no JSON report when a suite passes
 * its own reporters, as this one does): the specs a focus selects, from a dry run's verbose
 * output, and one spec's outcome, from its run's closing lines.
 */

/** The Describe that holds the Advanced DaemonSet specs (test/e2e/rollout_test.go). */
export const daemonSetFocus = "DaemonSet canary rollout";

/** One spec: the texts of its containers and of its It, as Ginkgo v1 prints them. */
export interface Spec {
  /** `[rollouts] Rollout [kruise.io] DaemonSet canary rollout` */
  containers: string;
  /** `DaemonSet V1->V2: 1,100% Succeeded` */
  it: string;
  /** `github.com/openkruise/rollouts/test/e2e/rollout_test.go:2817` */
  location: string;
}

/**
 * The specs of a `-ginkgo.dryRun -ginkgo.v -ginkgo.noColor` run: each is printed between two
 * rules of dashes as its containers' texts, its It's text (indented) and its location.
 */
export function dryRunSpecs(output: string): Spec[] {
  const specs: Spec[] = [];
  const blocks = output.split(/^-{20,}$/m).slice(1);
  for (const block of blocks) {
    const lines = block.split("\n").filter((l) => l.trim() !== "");
    if (lines.length < 3) continue;
    const location = lines[2].trim();
    if (!/\.go:\d+$/.test(location)) continue;
    specs.push({ containers: lines[0].trim(), it: lines[1].trim(), location });
  }
  return specs;
}

/**
 * A `-ginkgo.focus` that selects this spec alone: its full text, every character literal, to the
 * end. Not anchored at the start: Ginkgo v1 joins the texts of every container, its unnamed root
 * included, each followed by a space, so the text it matches starts with one.
 */
export function focusOn(spec: Spec): string {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return `${escape(`${spec.containers} ${spec.it}`)}$`;
}

export type Outcome = { passed: true } | { passed: false; failure: string };

/**
 * A focused run's outcome: passed when it exited 0 and its summary says one spec ran and passed;
 * otherwise failed, with the failure Ginkgo summarised (or the output's tail).
 */
export function runOutcome(exitCode: number, output: string): Outcome {
  const ran = output.match(/^Ran (\d+) of \d+ Specs?/m);
  const summary = output.match(/^(SUCCESS|FAIL)! -- (\d+) Passed \| (\d+) Failed/m);
  if (exitCode === 0 && ran?.[1] === "1" && summary?.[1] === "SUCCESS" && summary[2] === "1") {
    return { passed: true };
  }
  const failure = output.match(/^• Failure[\s\S]*?(?=^-{20,}$|^Ran \d+ of)/m)?.[0] ??
    output.slice(-3000);
  const status = `exit ${exitCode}, ${ran ? `ran ${ran[1]}` : "no spec ran"}`;
  return { passed: false, failure: `${status}\n${failure.trim()}` };
}

/**
 * Kruise Rollout's own race (ADR 0051): when the template changes in the middle of a release, its
 * BatchRelease records the new revision, and may upgrade its current batch (above the first)
 * against it before the Rollout, which restarts the release at its first step, deletes it. The
 * partition then stands at the old step's value for the new revision until the new BatchRelease
 * sets it again, seconds later, and any DaemonSet controller replaces pods in that window. Its
 * trace in the manager's log: an upgrade whose `updateRevision` is not its `rolloutID` (the
 * release's revision) at a batch index above 0. Answers that line, or undefined.
 */
export function batchReleaseRace(managerLog: string): string | undefined {
  for (const line of managerLog.split("\n")) {
    const context = line.match(/calculated context when upgrade batch: (\{.*\})/)?.[1];
    if (!context) continue;
    const { rolloutID, currentBatchIndex, updateRevision } = JSON.parse(context) as {
      rolloutID?: string;
      currentBatchIndex?: number;
      updateRevision?: string;
    };
    if (
      rolloutID && updateRevision && rolloutID !== updateRevision && (currentBatchIndex ?? 0) > 0
    ) {
      return line.trim();
    }
  }
  return undefined;
}
