import { assertEquals, assertMatch } from "@std/assert";
import { batchReleaseRace, dryRunSpecs, focusOn, runOutcome } from "./specs.ts";

// As kruise-rollout-e2e.test v0.6.2 prints a dry run (-ginkgo.dryRun -ginkgo.v -ginkgo.noColor).
const dryRun = `Running Suite: Kruise Rollout Resource Controller Suite
=======================================================
Random Seed: 1795937738
Will run 2 of 72 specs
SSSSSSSS
------------------------------
[rollouts] Rollout [kruise.io] DaemonSet canary rollout 
  DaemonSet V1->V2: 1,100% Succeeded
  github.com/openkruise/rollouts/test/e2e/rollout_test.go:2817
•
------------------------------
[rollouts] Rollout [kruise.io] DaemonSet canary rollout 
  V1->V2: Percentage, 1, 2 and continuous release v3
  github.com/openkruise/rollouts/test/e2e/rollout_test.go:2906
•SSSSSSSSS
Ran 2 of 72 Specs in 0.001 seconds
SUCCESS! -- 0 Passed | 0 Failed | 0 Pending | 70 Skipped
`;

Deno.test("a dry run's verbose output names each spec with its containers and location", () => {
  const specs = dryRunSpecs(dryRun);
  assertEquals(specs.map((s) => s.it), [
    "DaemonSet V1->V2: 1,100% Succeeded",
    "V1->V2: Percentage, 1, 2 and continuous release v3",
  ]);
  assertEquals(specs[0].containers, "[rollouts] Rollout [kruise.io] DaemonSet canary rollout");
  assertEquals(specs[1].location, "github.com/openkruise/rollouts/test/e2e/rollout_test.go:2906");
});

Deno.test("a spec's focus matches its full text only, its characters taken literally", () => {
  const [first, second] = dryRunSpecs(dryRun);
  const focus = new RegExp(focusOn(first));
  assertMatch(`${first.containers} ${first.it}`, focus);
  assertEquals(focus.test(`${second.containers} ${second.it}`), false);
  // `+` and `.` in a text are not regex operators.
  assertEquals(new RegExp(focusOn({ ...first, it: "a+b" })).test(`${first.containers} aab`), false);
});

Deno.test("a run passes only when it exits 0 and its summary says its one spec passed", () => {
  const passed =
    "Ran 1 of 72 Specs in 80.2 seconds\nSUCCESS! -- 1 Passed | 0 Failed | 0 Pending | 71 Skipped\nPASS\n";
  assertEquals(runOutcome(0, passed), { passed: true });
  // A focus that selected nothing also exits 0.
  const none =
    "Ran 0 of 72 Specs in 0.0 seconds\nSUCCESS! -- 0 Passed | 0 Failed | 0 Pending | 72 Skipped\n";
  assertEquals(runOutcome(0, none).passed, false);
  const failed = [
    "------------------------------",
    "• Failure [301.2 seconds]",
    "[rollouts] Rollout",
    "  DaemonSet V1->V2: 1,100% Succeeded",
    "  Timed out after 300.001s.",
    "  Expected <bool>: false to be true",
    "------------------------------",
    "Ran 1 of 72 Specs in 301.3 seconds",
    "FAIL! -- 0 Passed | 1 Failed | 0 Pending | 71 Skipped",
  ].join("\n");
  const outcome = runOutcome(1, failed);
  assertEquals(outcome.passed, false);
  if (!outcome.passed) {
    assertMatch(outcome.failure, /^exit 1, ran 1\n• Failure \[301\.2 seconds\]/);
    assertMatch(outcome.failure, /Expected <bool>: false to be true/);
  }
});

Deno.test("Kruise Rollout's race is told by an upgrade of a later batch against a revision not the release's", () => {
  const upgrade = (context: object) =>
    `I1129 08:06:27.224745   10349 control_plane.go:106] BatchRelease ns/rollouts-test calculated context when upgrade batch: ${
      JSON.stringify(context)
    } with 3 pods`;
  const race = upgrade({
    rolloutID: "569545d858",
    currentBatchIndex: 1,
    updateRevision: "7fdf75b6f5",
  });
  assertEquals(batchReleaseRace(`other line\n${race}\n`), race);
  // The first batch of the restarted release, and a later batch of the release's own revision.
  const fresh = upgrade({
    rolloutID: "569545d858",
    currentBatchIndex: 0,
    updateRevision: "7fdf75b6f5",
  });
  const own = upgrade({
    rolloutID: "7fdf75b6f5",
    currentBatchIndex: 2,
    updateRevision: "7fdf75b6f5",
  });
  assertEquals(batchReleaseRace(`${fresh}\n${own}\n`), undefined);
});
