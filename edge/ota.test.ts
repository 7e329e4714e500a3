import { assertEquals, assertThrows } from "@std/assert";
import { interceptApi, type Overrides } from "../kube/api.ts";
import { KubeError } from "../kube/errors.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { memoryLogger } from "../lib/log.ts";
import { memoryApi } from "../tests/doubles/memory-api.ts";
import { leanApiOver, type WatchSender } from "../tests/doubles/lean-api.ts";
import type { Pod } from "../api/kube-objects.ts";
import { eventually } from "../lib/eventually.ts";
import { OtaError } from "../controller/ota-checks.ts";
import { EdgeOta } from "./ota.ts";
import { NodePodCache } from "./pod-cache.ts";
import { maxPendingUpgrades, UpgradeJournal } from "./upgrade-journal.ts";

const marked = (name: string, uid: string, status = "True") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace: "default",
    uid,
    ownerReferences: [{
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      name: "ds",
      uid: "ds-1",
      controller: true,
    }],
  },
  spec: { nodeName: "edge-1", containers: [{ name: "c", image: "c:1" }] },
  status: { conditions: [{ type: "PodNeedUpgrade", status, message: "controllerrevision: v2" }] },
});

const request = (name: string, uid: string) => ({
  namespace: "default",
  name,
  uid,
  revision: "controllerrevision: v2",
  requestedAt: "2026-11-26T10:00:00.000Z",
});

/** Overrides that record the UID of each pod deleted, in order. */
function recordingDeletes(): { deletes: string[]; overrides: Overrides } {
  const deletes: string[] = [];
  return {
    deletes,
    overrides: {
      deletePod: (p, next) => {
        deletes.push(p.uid);
        return next(p);
      },
    },
  };
}

/** The journal as another agent would read it from the state directory. */
function journalIn(dir: string): UpgradeJournal {
  const read = new UpgradeJournal(dir, "edge-1");
  read.load();
  return read;
}

/**
 * An edge agent's OTA over a memory API holding `pods` (with `overrides`), its node's pod cache
 * started, the journal `journal` returns for the state directory; stopped after `body`.
 */
async function withEdgeOta(
  setup: {
    pods: KubeObject[];
    overrides?: Overrides;
    journal?: (dir: string) => UpgradeJournal;
    retryBaseMs?: number;
  },
  body: (
    agent: {
      api: ReturnType<typeof memoryApi>;
      ota: EdgeOta;
      cache: NodePodCache;
      dir: string;
      watch: WatchSender;
    },
  ) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    const api = memoryApi();
    for (const pod of setup.pods) api.put("pods", pod);
    const journal = setup.journal?.(dir) ?? new UpgradeJournal(dir, "edge-1");
    const watch: WatchSender = {};
    const lean = leanApiOver(interceptApi(api, setup.overrides ?? {}), watch);
    const cache = new NodePodCache({
      api: lean,
      node: "edge-1",
      stateDir: dir,
      logger: memoryLogger(),
    });
    const ota = new EdgeOta({
      api: lean,
      cache,
      journal,
      node: "edge-1",
      logger: memoryLogger(),
      ...(setup.retryBaseMs === undefined ? {} : { retryBaseMs: setup.retryBaseMs }),
    });
    cache.start();
    try {
      await body({ api, ota, cache, dir, watch });
    } finally {
      ota.close();
      await cache.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("queued upgrades: carried out once when the link returns; a pod gone, replaced or going counts as done (an earlier run's delete); a failed pre-check is refused", async () => {
  const going = marked("going", "uid-going");
  const { deletes, overrides } = recordingDeletes();
  await withEdgeOta({
    pods: [
      marked("ready", "uid-ready"),
      marked("replaced", "uid-new"),
      { ...going, metadata: { ...going.metadata, deletionTimestamp: "2026-11-26T10:00:01Z" } },
      marked("unmarked", "uid-unmarked", "False"),
    ],
    overrides,
    journal: (dir) => {
      // As left by an agent that stopped while cut off, or right after a delete it did not record.
      const left = new UpgradeJournal(dir, "edge-1");
      const asked = [["ready", "uid-ready"], ["gone", "uid-gone"], ["replaced", "uid-old"], [
        "going",
        "uid-going",
      ], ["unmarked", "uid-unmarked"]];
      for (const [name, uid] of asked) left.add(request(name, uid));
      const restarted = new UpgradeJournal(dir, "edge-1");
      restarted.load();
      assertEquals(restarted.pending().length, 5);
      return restarted;
    },
  }, async ({ ota, dir }) => {
    const journal = () => journalIn(dir);
    await eventually("every request settled", () => journal().pending().length === 0);
    await ota.carryOutPending(); // A second reconnection: nothing left to do.
    // Written down: another agent reads the same outcome.
    const outcome = Object.fromEntries(journal().list().map((r) => [r.name, r.state]));
    assertEquals(outcome, {
      ready: "started",
      gone: "replaced",
      replaced: "replaced",
      going: "replaced",
      unmarked: "refused",
    });
    assertEquals(deletes, ["uid-ready"]);
    const refused = journal().list().find((r) => r.name === "unmarked");
    assertEquals(refused?.detail?.includes("update status is False"), true);
  });
});

Deno.test("a queued upgrade whose node's maintenance window closed waits, and goes once the pod is marked in the next window", async () => {
  const held = marked("held", "uid-held", "False");
  held.status.conditions[0] = {
    ...held.status.conditions[0],
    reason: "OutsideMaintenanceWindow",
  } as typeof held.status.conditions[0];
  const { deletes, overrides } = recordingDeletes();
  await withEdgeOta({
    pods: [held],
    overrides,
    journal: (dir) => {
      const left = new UpgradeJournal(dir, "edge-1");
      left.add(request("held", "uid-held"));
      return left;
    },
  }, async ({ api, ota, dir, watch }) => {
    const journal = () => journalIn(dir);
    await eventually("the watch open", () => watch.send !== undefined);
    await ota.carryOutPending();
    assertEquals(journal().pending().map((r) => r.name), ["held"], "still pending");
    assertEquals(deletes, []);
    // The next window: the controller marks the pod again; the watch brings it, the agent goes.
    const markedAgain = api.put("pods", marked("held", "uid-held"));
    watch.send!(markedAgain as Pod);
    await eventually("the queued upgrade started", () => journal().pending().length === 0);
    assertEquals(journal().list().map((r) => [r.name, r.state]), [["held", "started"]]);
    assertEquals(deletes, ["uid-held"]);
  });
});

Deno.test("queued upgrades are bounded: one per pod, at most maxPendingUpgrades", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const journal = new UpgradeJournal(dir, "edge-1");
    journal.add(request("a", "uid-a"));
    journal.add(request("a", "uid-a"));
    assertEquals(journal.pending().length, 1);
    for (let i = 1; i < maxPendingUpgrades; i++) journal.add(request(`p${i}`, `uid-${i}`));
    const err = assertThrows(() => journal.add(request("one-more", "uid-x")), OtaError);
    assertEquals(err.status, 503);
    assertEquals(journal.pending().length, maxPendingUpgrades);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("queued upgrades: a delete refused for a pod the node's list has (an API server just restarted) is tried again with backoff; one always forbidden is refused in the end", async () => {
  const tries: string[] = [];
  let journal: UpgradeJournal | undefined;
  await withEdgeOta({
    pods: [marked("lagging", "uid-lagging"), marked("forbidden", "uid-forbidden")],
    overrides: {
      deletePod: (p, next) => {
        tries.push(p.name);
        // NodeRestriction's pod lister, behind for two tries; the Node authorizer, for ever.
        if (p.name === "lagging" && tries.filter((n) => n === "lagging").length <= 2) {
          throw new KubeError(404, "NotFound", `pods "${p.name}" not found`, "delete pods");
        }
        if (p.name === "forbidden") {
          throw new KubeError(403, "Forbidden", "no relationship found", "delete pods");
        }
        return next(p);
      },
    },
    journal: (dir) => {
      journal = new UpgradeJournal(dir, "edge-1");
      journal.add(request("lagging", "uid-lagging"));
      journal.add(request("forbidden", "uid-forbidden"));
      return journal;
    },
    retryBaseMs: 1,
  }, async ({ api }) => {
    await eventually("every request settled", () => journal!.pending().length === 0, {
      timeoutMs: 10_000,
    });
    const outcome = Object.fromEntries(journal!.list().map((r) => [r.name, r.state]));
    assertEquals(outcome, { lagging: "started", forbidden: "refused" });
    assertEquals(tries.filter((n) => n === "lagging").length, 3);
    assertEquals(tries.filter((n) => n === "forbidden").length, 9);
    const refused = journal!.list().find((r) => r.name === "forbidden");
    assertEquals(refused?.detail?.includes("the API server forbids it"), true);
    assertEquals(api.objects.pods.has("default/lagging"), false);
  });
});

Deno.test("a direct upgrade the API server refuses for a pod the node's list has answers 503 to be asked again; a pod it does not list stays 404", async () => {
  let deletes = 0;
  await withEdgeOta({
    pods: [marked("lagging", "uid-lagging"), marked("unbound", "uid-unbound")],
    overrides: {
      // The Node authorizer's graph, behind for one pod; NodeRestriction's lister, for one delete.
      getPod: (p, next) => {
        if (p.name === "unbound") {
          throw new KubeError(403, "Forbidden", "no relationship found", "get pods");
        }
        return next(p);
      },
      deletePod: (p, next) => {
        if (++deletes === 1) {
          throw new KubeError(404, "NotFound", `pods "${p.name}" not found`, "delete pods");
        }
        return next(p);
      },
    },
  }, async ({ api, ota, cache }) => {
    await eventually("the node's pods listed", () => cache.pod("default", "unbound") !== undefined);
    const answer = (name: string) =>
      ota.upgrade("default", name, { whenConnected: false }).then(
        (ok) => ok.status,
        (err: OtaError) => `${err.status} ${err.message}`,
      );
    const first = await answer("lagging");
    assertEquals(String(first).startsWith("503 "), true, String(first));
    assertEquals(String(first).includes("try again"), true);
    assertEquals(await answer("lagging"), 200);
    assertEquals(api.objects.pods.has("default/lagging"), false);
    assertEquals(String(await answer("unbound")).startsWith("503 "), true);
    // A pod the node does not list: the API server's word stands.
    assertEquals(String(await answer("never-there")).startsWith("404 "), true);
  });
});
