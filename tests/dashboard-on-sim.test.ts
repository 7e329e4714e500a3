/**
 * `edgeroll dashboard` as a person runs it, against sim with a controller rolling a set: the
 * list links the set, the page draws its nodes, the stream turns tiles as pods update and shows
 * a node cut off from the cloud, and the pause button (its POST, with the page's token and
 * origin) pauses the set through the CLI's own code.
 */
import { assertEquals, assertStringIncludes } from "@std/assert";
import { withDashboard } from "./processes.ts";
import { withDashboardOnSim } from "./dashboard-fixture.ts";
import { startTarget } from "./e2e/target.ts";
import { Kube } from "./e2e/kube.ts";
import { advancedDaemonSet, setImage } from "./e2e/edgeroll-scenarios.ts";
import { sseData } from "./sse.ts";

type Update = { tiles: [string, string][]; summary: string };

Deno.test({
  name:
    "dashboard on sim: tiles turn as pods update, a cut-off node shows as cut off, pause works from the page",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const ns = "dashboard";
    await withDashboardOnSim({ nodes: 3, ns }, async ({ target, kube, url, setPath }) => {
      assertStringIncludes(await (await fetch(`${url}/`)).text(), `href="${setPath}"`);
      const page = await (await fetch(`${url}${setPath}`)).text();
      assertEquals(page.match(/id="n-[^"]+" class="tile updated"/g)?.length, 3, page);
      const token = /name="edgeroll-token" content="([^"]+)"/.exec(page)![1];

      const stream = sseData<Update>(await fetch(`${url}${setPath}/stream`));
      const states = new Map<string, string>();
      const seen = new Set<string>();
      /** Reads updates until `done` holds of the tiles. */
      const until = async (what: string, done: () => boolean) => {
        const deadline = Date.now() + 60_000;
        while (!done()) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          const { value } = await stream.next();
          for (const [node, state] of value!.tiles) {
            states.set(node, state);
            seen.add(state);
          }
        }
      };
      await until("every tile", () => states.size === 3);
      await setImage(kube, ns, "v2");
      await until(
        "the rollout to pass through the tiles and end with all updated",
        () => seen.has("updating") && [...states.values()].every((s) => s === "updated"),
      );
      const node = target.nodes[0];
      await target.disconnect(node);
      await until(`${node} cut off`, () => states.get(node) === "cut-off");
      await stream.return(undefined);

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
    });
  },
});

Deno.test({
  name: "kubectl edgeroll dashboard serves the same pages (bin/kubectl-edgeroll on PATH)",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const target = await startTarget("sim", { nodes: 1 });
    try {
      const kube = new Kube(target.kubeconfigPath);
      await kube.installCrd();
      await kube.createNamespace("plugin");
      await kube.apply(advancedDaemonSet("plugin", "v1"));
      await withDashboard(target.kubeconfigPath, async (url) => {
        const list = await (await fetch(`${url}/`)).text();
        assertStringIncludes(list, 'href="/sets/advanceddaemonsets/plugin/edge-agent"');
      }, { kubectlPlugin: true });
    } finally {
      await target.stop();
    }
  },
});
