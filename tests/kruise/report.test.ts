import { assertEquals } from "@std/assert";
import { daemonSetOutcomes, type GinkgoReport, stepName, trimmed } from "./report.ts";

const at = (file: string, line: number) => ({
  FileName: `github.com/openkruise/kruise/test/e2e/apps/${file}`,
  LineNumber: line,
});

/** The shape kruise-e2e.test writes: every spec of the binary, the filtered ones skipped. */
const report: GinkgoReport[] = [{
  SuiteSucceeded: false,
  SpecialSuiteFailureReasons: null,
  SpecReports: [
    {
      LeafNodeType: "It",
      LeafNodeText: "b",
      LeafNodeLocation: at("v1beta1/daemonset.go", 90),
      State: "passed",
    },
    {
      LeafNodeType: "It",
      LeafNodeText: "a",
      LeafNodeLocation: at("v1beta1/daemonset.go", 60),
      State: "passed",
    },
    {
      LeafNodeType: "It",
      LeafNodeText: "a",
      LeafNodeLocation: at("v1alpha1/daemonset.go", 60),
      State: "failed",
      Failure: {
        Message:
          "error waiting for daemon pod to start\nExpected\n    <*errors.errorString>: timed out",
        Location: at("v1alpha1/daemonset.go", 73),
        FailureNodeType: "It",
      },
    },
    {
      LeafNodeType: "It",
      LeafNodeText: "a",
      LeafNodeLocation: at("v1alpha1/cloneset.go", 60),
      State: "skipped",
    },
    {
      LeafNodeType: "AfterSuite",
      LeafNodeText: "",
      LeafNodeLocation: at("v1alpha1/daemonset.go", 1),
      State: "passed",
    },
  ],
}];

Deno.test("the report's DaemonSet specs: by source file, in source order, with their failures", () => {
  const outcomes = daemonSetOutcomes(report);
  assertEquals(outcomes.map((o) => [stepName(o), o.state]), [
    ["v1alpha1: a", "failed"],
    ["v1beta1: a", "passed"],
    ["v1beta1: b", "passed"],
  ]);
  assertEquals(
    outcomes[0].failure,
    "error waiting for daemon pod to start\nExpected\n    <*errors.errorString>: timed out\n" +
      "(at test/e2e/apps/v1alpha1/daemonset.go:73, in It)",
  );
});

Deno.test("a failure is trimmed to its first lines and says so", () => {
  assertEquals(trimmed("one\ntwo\nthree", 2), "one\ntwo\n[… trimmed]");
  assertEquals(trimmed("one\ntwo", 2), "one\ntwo");
  assertEquals(trimmed("abcdef", 5, 3), "abc\n[… trimmed]");
});
