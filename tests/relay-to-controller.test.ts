/**
 * The relay's events, through the controller's real `/events` route (called in-process), reach
 * the right sets: pods by owner, managed DaemonSets only, nodes once per real change (not per heartbeat).
 */
import { pullForAnnotation } from "../api/image-pull.ts";
import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { kubeConfigForServer } from "../kube/config.ts";
import { startRelay } from "../relay/relay.ts";
import type { WatchFn } from "../kube/watcher.ts";
import { harness, podOfAgent, token } from "./doubles/controller-harness.ts";

type Line = [string, unknown];

function readyNode(resourceVersion: string, ready: string, heartbeat: string) {
  return {
    metadata: { name: "node-0", resourceVersion },
    status: {
      conditions: [{ type: "Ready", status: ready, lastHeartbeatTime: `2026-11-23T${heartbeat}Z` }],
    },
  };
}

Deno.test("relay events reach the controller and reconcile the sets they concern", async () => {
  await using h = harness({ nodes: 1 });
  const byPath: Record<string, Line[]> = {
    "/api/v1/pods": [
      ["ADDED", podOfAgent("agent-x", "5")],
      ["ADDED", { metadata: { name: "loner", namespace: "edge", resourceVersion: "6" } }],
      // A pod of an image pull Job (ADR 0034): owned by its Job, it calls the set it pulls for.
      ["ADDED", {
        metadata: {
          name: "image-pre-pull-agent-x-v2-k7p2q",
          namespace: "edge",
          resourceVersion: "6",
          annotations: { [pullForAnnotation]: "advanceddaemonsets/edge/agent" },
          ownerReferences: [{
            apiVersion: "batch/v1",
            kind: "Job",
            name: "j",
            uid: "u",
            controller: true,
          }],
        },
      }],
    ],
    "/apis/apps/v1/daemonsets": [["ADDED", {
      metadata: { name: "plain", namespace: "edge", resourceVersion: "7" },
    }]],
    "/api/v1/nodes": [
      ["ADDED", readyNode("8", "True", "12:00:00")],
      ["MODIFIED", readyNode("9", "True", "12:00:10")], // a heartbeat
      ["MODIFIED", readyNode("10", "False", "12:00:10")],
    ],
  };
  const watched = new Set<string>();
  const watch: WatchFn = (path, _query, onLine) => {
    watched.add(path);
    for (const [type, object] of byPath[path] ?? []) queueMicrotask(() => onLine(type, object));
    byPath[path] = [];
    return Promise.resolve(new AbortController());
  };
  const posted: number[] = [];
  const relay = startRelay({
    kubeConfig: kubeConfigForServer("http://127.0.0.1:1"),
    target: "http://controller.test",
    token,
    logger: memoryLogger(),
    watch,
    flushMs: 5,
    fetch: (async (url: string | URL | Request, init?: RequestInit) => {
      const res = await h.controller.app.request(String(url), init);
      posted.push(res.status);
      return res;
    }) as typeof fetch,
  });
  try {
    // Each watch hands over its lines in microtasks once started: all are in by the next poll.
    await eventually(
      "the relay to watch pods, sets and nodes",
      () => Object.keys(byPath).every((path) => watched.has(path)),
    );
    await relay.sender.flush();
    await h.controller.queue.idle();
    assertEquals(posted.every((s) => s === 202), true);
    assertEquals(
      relay.sender.stats.queued,
      4,
      "the owned pod, the pull pod, the node added and gone NotReady; not its heartbeat, not " +
        "the loner, not the plain DaemonSet",
    );
    assertEquals(relay.sender.stats.sent, 3, "the node's two events folded into its latest");
    // The pod maps to its set, the node fans out to every set: one set, reconciled once or twice.
    assertEquals([...new Set(h.plans.map((s) => s.set.metadata.name))], ["agent"]);
  } finally {
    await relay.stop();
  }
});
