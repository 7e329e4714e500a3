import { assert, assertEquals, assertRejects } from "@std/assert";
import { parseAllDocuments } from "yaml";
import { downCluster, kwokParallelism, nodeNames, readState, upCluster } from "./control-plane.ts";
import { isAlive } from "./processes.ts";
import { untilExeced } from "./test-helpers.ts";

Deno.test("nodes are named edge-1…edge-N", () => {
  assertEquals(nodeNames(3), ["edge-1", "edge-2", "edge-3"]);
});

Deno.test("kwok gets a worker per 250 nodes, never fewer than its own 4: up to 1,000 nodes as before", () => {
  assertEquals([10, 1_000, 1_001, 5_000, 10_000].map(kwokParallelism), [4, 4, 5, 20, 40]);
});

Deno.test("each kwok stage file holds the stages of one kind, so kwok starts Node before Pod", async () => {
  // A pod stage among the node stages would start kwok's Pod controller first again (ADR 0018).
  const kinds = async (file: string) =>
    parseAllDocuments(await Deno.readTextFile(new URL(file, import.meta.url)))
      .map((doc) => doc.toJS())
      .map((stage) =>
        `${stage.kind} ${stage.spec.resourceRef.apiGroup}/${stage.spec.resourceRef.kind}`
      );
  const nodeStages = await kinds("./kwok-node-stages.yaml");
  const podStages = await kinds("./kwok-pod-stages.yaml");
  assertEquals(new Set(nodeStages), new Set(["Stage v1/Node"]));
  assertEquals(new Set(podStages), new Set(["Stage v1/Pod"]));
});

async function podStages() {
  return parseAllDocuments(
    await Deno.readTextFile(new URL("./kwok-pod-stages.yaml", import.meta.url)),
  ).map((doc) =>
    doc.toJS() as {
      metadata: { name: string };
      spec: {
        selector: { matchExpressions: { key: string }[] };
        next: { statusTemplate?: string };
      };
    }
  );
}

/** The text of a stage's template block `name`, from its opening comment to its closing one. */
function templateBlock(stages: Awaited<ReturnType<typeof podStages>>, stage: string, name: string) {
  const template = stages.find((s) => s.metadata.name === stage)?.spec.next.statusTemplate ?? "";
  const match = template.match(
    new RegExp(`\\{\\{/\\* ${name} block:[^]*?\\{\\{/\\* end of ${name} block \\*/\\}\\}`),
  );
  if (!match) throw new Error(`${stage} has no ${name} block`);
  return match[0];
}

Deno.test("the pod stages that write Ready share one readiness gates block (ADR 0029)", async () => {
  const stages = await podStages();
  assertEquals(
    templateBlock(stages, "pod-readiness-gates", "gates"),
    templateBlock(stages, "pod-ready", "gates"),
  );
});

Deno.test("the pod stages that report resources share one block, and resize within the nodes' allocatable (ADR 0056)", async () => {
  const stages = await podStages();
  assertEquals(
    templateBlock(stages, "pod-resize", "resources"),
    templateBlock(stages, "pod-ready", "resources"),
  );
  // The room both resize stages judge by is every kwok node's allocatable.
  const nodeStages = await Deno.readTextFile(new URL("./kwok-node-stages.yaml", import.meta.url));
  const allocatable = nodeStages.match(/allocatable:\s*\n\s*cpu: "(\w+)"\s*\n\s*memory: (\w+)/);
  assertEquals(allocatable?.slice(1), ["32", "128Gi"]);
  const fits = 'requested("cpu") <= 32 and requested("memory") <= 137438953472';
  for (const name of ["pod-resize", "pod-resize-infeasible"]) {
    const keys = stages.find((s) => s.metadata.name === name)!.spec.selector.matchExpressions
      .map((e) => e.key);
    assert(keys.some((k) => k.endsWith(fits)), `${name} judges room by the nodes' allocatable`);
  }
  const infeasible = stages.find((s) => s.metadata.name === "pod-resize-infeasible")!.spec.next
    .statusTemplate!;
  assert(infeasible.includes("capacity: 32000") && infeasible.includes("capacity: 137438953472"));
});

Deno.test("up without built binaries says to run the build, and starts nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const statePath = `${dir}/state.json`;
    await assertRejects(
      () => upCluster({ nodes: 1, binDir: `${dir}/bin`, statePath }),
      Error,
      "run cluster/build.sh first",
    );
    assertEquals(await readState(statePath), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("down cleans a stray state file, sparing a PID that now runs something else", async () => {
  const dir = await Deno.makeTempDir();
  const unrelated = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    await untilExeced(unrelated.pid, "sleep");
    const statePath = `${dir}/state.json`;
    const workDir = `${dir}/work`;
    await Deno.mkdir(workDir);
    await Deno.writeTextFile(
      statePath,
      JSON.stringify({
        workDir,
        kubeconfigPath: `${dir}/admin.kubeconfig`,
        server: "https://127.0.0.1:1",
        nodes: ["edge-1"],
        processes: [{
          name: "etcd",
          pid: unrelated.pid,
          binary: "/nonexistent/cluster/bin/etcd",
          logPath: `${workDir}/etcd.log`,
        }],
      }),
    );
    assertEquals(await downCluster(statePath), true);
    assertEquals(await readState(statePath), undefined);
    await assertRejects(() => Deno.stat(workDir), Deno.errors.NotFound);
    assert(await isAlive({ pid: unrelated.pid, binary: "sleep" }));
    assertEquals(await downCluster(statePath), false);
  } finally {
    unrelated.kill("SIGKILL");
    await unrelated.status;
    await Deno.remove(dir, { recursive: true });
  }
});
