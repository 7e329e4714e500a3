import { assertEquals } from "@std/assert";
import { PodsByNode } from "./pods-by-node.ts";

type TestPod = { name: string; spec?: { nodeName?: string } };
const pod = (name: string, nodeName?: string): TestPod => ({ name, spec: { nodeName } });

Deno.test("PodsByNode: a pod is found on its node, moved with its key, forgotten with the node it left", () => {
  const pods = new PodsByNode<TestPod>((p) => p.name);
  assertEquals(pods.set(pod("a", "n1")), undefined, "nothing replaced");
  pods.set(pod("b", "n1"));
  pods.set(pod("c"));
  assertEquals(pods.on("n1").map((p) => p.name), ["a", "b"]);
  assertEquals(pods.on(""), [pod("c")], "an unbound pod is on no node's list but its own");
  assertEquals(pods.set(pod("a", "n2")), "n1", "the replaced pod's node is answered");
  assertEquals([pods.on("n1").map((p) => p.name), pods.on("n2").map((p) => p.name)], [["b"], [
    "a",
  ]]);
  assertEquals(pods.delete("b"), "n1");
  assertEquals(pods.delete("b"), undefined, "a pod not kept answers no node");
  assertEquals(pods.on("n1"), []);
  pods.clear();
  assertEquals(pods.on("n2"), []);
});
