import { assertEquals } from "@std/assert";
import { pullForAnnotation } from "../api/image-pull.ts";
import { keysForChange, NodeChanges, setQueueKey } from "./queue-keys.ts";

Deno.test("a pod of an image pull Job calls the set it pulls for; one naming no set calls none", () => {
  const pullPod = (pullFor: string) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "image-pre-pull-agent-x-v2-k7p2q",
      namespace: "edge",
      annotations: { [pullForAnnotation]: pullFor },
      ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "j", controller: true }],
    },
  });
  const nodes = new NodeChanges();
  assertEquals(keysForChange(pullPod("daemonsets/edge/agent"), false, nodes), [
    setQueueKey({ kind: "daemonsets", namespace: "edge", name: "agent" }),
  ]);
  assertEquals(keysForChange(pullPod("not/a/set/key"), false, nodes), []);
  assertEquals(keysForChange(pullPod(""), true, nodes), []);
});

Deno.test("node names sent in events are remembered up to a bound, the least recently seen first", () => {
  const nodes = new NodeChanges();
  const node = (name: string, zone = "a") => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
  });
  assertEquals(nodes.changed(node("edge-0"), false), true);
  assertEquals(nodes.changed(node("edge-0"), false), false, "a heartbeat moves nothing");
  for (let i = 1; i <= NodeChanges.maxRemembered + 10; i++) nodes.changed(node(`n-${i}`), false);
  assertEquals(nodes.size, NodeChanges.maxRemembered);
  // edge-0 was the least recently seen: forgotten, its next event counts as a change once.
  assertEquals(nodes.changed(node("edge-0"), false), true);
  assertEquals(nodes.changed(node("edge-0", "b"), false), true);
  assertEquals(nodes.changed(node("edge-0", "b"), false), false);
});

Deno.test("a ControllerRevision calls the set that controls it: a plain DaemonSet's comes after its template change", () => {
  const revision = (owner: { apiVersion: string; kind: string; controller?: boolean }) => ({
    apiVersion: "apps/v1",
    kind: "ControllerRevision",
    metadata: {
      name: "ota-agent-5d8f7c",
      namespace: "edge",
      ownerReferences: [{ ...owner, name: "ota-agent" }],
    },
  });
  const nodes = new NodeChanges();
  assertEquals(
    keysForChange(
      revision({ apiVersion: "apps/v1", kind: "DaemonSet", controller: true }),
      false,
      nodes,
    ),
    [setQueueKey({ kind: "daemonsets", namespace: "edge", name: "ota-agent" })],
  );
  assertEquals(
    keysForChange(revision({ apiVersion: "apps/v1", kind: "DaemonSet" }), false, nodes),
    [],
    "not its controller",
  );
  assertEquals(
    keysForChange(
      revision({ apiVersion: "apps/v1", kind: "StatefulSet", controller: true }),
      false,
      nodes,
    ),
    [],
  );
});
