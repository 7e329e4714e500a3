/**
 * `edgeroll dashboard` as a person runs it while the controller rolls a set: the list links the
 * set, the page draws its nodes, the stream turns tiles as pods update and shows a node cut off
 * from the cloud, and the pause button (its POST, with the page's token and origin) pauses the set
 * through the CLI's own code. On sim and on cluster/ (ADR 0045).
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { withRollingDashboard } from "../dashboard-fixture.ts";
import { sseData } from "../sse.ts";
import { setImage } from "./edgeroll-scenarios.ts";
import type { Scenario } from "./scenarios.ts";

type Update = { tiles: [string, string][]; summary: string };

export const dashboardScenario: Scenario = {
  name:
    "dashboard: tiles turn as pods update, a cut-off node shows as cut off, pause works from the page",
  async run(target, kube) {
    const ns = "e2e-dashboard";
    const nodes = target.nodes.length;
    await withRollingDashboard(target, kube, ns, async (url, setPath) => {
      assertStringIncludes(await (await fetch(`${url}/`)).text(), `href="${setPath}"`);
      const page = await (await fetch(`${url}${setPath}`)).text();
      assertEquals(page.match(/id="n-[^"]+" class="tile updated"/g)?.length, nodes, page);
      const token = /name="edgeroll-token" content="([^"]+)"/.exec(page)![1];

      // Aborted at the end: a read still waiting for an update ends with it.
      const streaming = new AbortController();
      const stream = sseData<Update>(
        await fetch(`${url}${setPath}/stream`, { signal: streaming.signal }),
      );
      const states = new Map<string, string>();
      const seen = new Set<string>();
      /** Reads updates until `done` holds of the tiles, for a minute at most. */
      const until = async (what: string, done: () => boolean) => {
        const deadline = Date.now() + 60_000;
        while (!done()) {
          let timer: ReturnType<typeof setTimeout> | undefined;
          const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`timed out waiting for ${what}`)),
              Math.max(0, deadline - Date.now()),
            );
          });
          const { value } = await Promise.race([stream.next(), timeout]).finally(() =>
            clearTimeout(timer)
          );
          for (const [node, state] of value!.tiles) {
            states.set(node, state);
            seen.add(state);
          }
        }
      };
      await until("every tile", () => states.size === nodes);
      seen.clear();
      await setImage(kube, ns, "v2");
      // The new revision shows on tiles not yet on it (old, or updating), then every tile on it.
      await until(
        "the rollout to show on the tiles and end with all updated",
        () =>
          [...seen].some((s) => s !== "updated") &&
          [...states.values()].every((s) => s === "updated"),
      );
      const node = target.nodes[0];
      await target.disconnect(node);
      try {
        await until(`${node} cut off`, () => states.get(node) === "cut-off");
      } finally {
        await target.reconnect(node);
        streaming.abort();
      }

      const pause = await fetch(`${url}${setPath}/pause`, {
        method: "POST",
        headers: { origin: url, "x-edgeroll-dashboard": token },
      });
      assertEquals([pause.status, (await pause.json()).message], [
        200,
        `advanceddaemonsets/${ns}/edge-agent paused`,
      ]);
      const set = await kube.json<
        { spec: { updateStrategy: { rollingUpdate: { paused?: boolean } } } }
      >([
        "--namespace",
        ns,
        "get",
        "ads",
        "edge-agent",
        "-o",
        "json",
      ]);
      assertEquals(set.spec.updateStrategy.rollingUpdate.paused, true);
      await kube.run(["--namespace", ns, "delete", "ads", "edge-agent", "--wait=false"]);
    }, 2);
  },
};
