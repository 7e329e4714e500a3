/**
 * Reads Ginkgo's `--ginkgo.json-report` of kruise-e2e.test (tests/kruise/daemonset.kruise.ts): the
 * outcome of each Advanced DaemonSet spec, told apart by its source file, since
 * `test/e2e/apps/v1alpha1/daemonset.go` and `test/e2e/apps/v1beta1/daemonset.go` give the same
 * spec texts.
 */

/** The spec files, by the API version their specs drive (paths as -trimpath leaves them). */
const specFile = /\/test\/e2e\/apps\/(v1alpha1|v1beta1)\/daemonset\.go$/;
export const specsPerVersion = 7;

/** One spec's outcome. */
export interface SpecOutcome {
  apiVersion: string;
  /** The `It` text. */
  spec: string;
  line: number;
  /** Ginkgo's state: passed, failed, timedout, interrupted, panicked, aborted, skipped, pending. */
  state: string;
  /** Ginkgo's failure message and where it failed. */
  failure?: string;
}

/** The parts of Ginkgo's types.Report read here (one per suite). */
export interface GinkgoReport {
  SuiteSucceeded: boolean;
  SpecialSuiteFailureReasons?: string[] | null;
  SpecReports: {
    LeafNodeType: string;
    LeafNodeText: string;
    LeafNodeLocation: { FileName: string; LineNumber: number };
    State: string;
    Failure?: {
      Message: string;
      Location: { FileName: string; LineNumber: number };
      FailureNodeType?: string;
    };
  }[];
}

/** A spec's name in the table's terms and as a `t.step`: `v1beta1: should …`. */
export const stepName = (o: SpecOutcome) => `${o.apiVersion}: ${o.spec}`;

/**
 * The DaemonSet specs of one report, in source order, each version after the other. The report
 * lists every spec of the binary, those filtered out as skipped: only the two files' `It`s count.
 */
export function daemonSetOutcomes(reports: GinkgoReport[]): SpecOutcome[] {
  const outcomes: SpecOutcome[] = [];
  for (const report of reports) {
    for (const s of report.SpecReports ?? []) {
      const version = specFile.exec(s.LeafNodeLocation.FileName)?.[1];
      if (!version || s.LeafNodeType !== "It") continue;
      outcomes.push({
        apiVersion: version,
        spec: s.LeafNodeText,
        line: s.LeafNodeLocation.LineNumber,
        state: s.State,
        failure: s.Failure?.Message ? failureText(s.Failure) : undefined,
      });
    }
  }
  return outcomes.sort((a, b) => a.line - b.line || a.apiVersion.localeCompare(b.apiVersion));
}

function failureText(f: NonNullable<GinkgoReport["SpecReports"][number]["Failure"]>): string {
  const file = f.Location.FileName.replace(/^.*\/test\/e2e\//, "test/e2e/");
  const node = f.FailureNodeType ? `, in ${f.FailureNodeType}` : "";
  return `${f.Message.trim()}\n(at ${file}:${f.Location.LineNumber}${node})`;
}

/** At most `lines` lines and `chars` characters of `text`, saying so when it cut. */
export function trimmed(text: string, lines = 25, chars = 2500): string {
  const whole = text.trim();
  let out = whole.split("\n").slice(0, lines).join("\n");
  if (out.length > chars) out = out.slice(0, chars);
  return out.length < whole.length ? `${out}\n[… trimmed]` : out;
}
