/**
 * The dashboard in a real browser: Debian's Chromium driven by playwright-core (drive.mjs, under
 * Node) on a set's page while sim rolls it: every tile turns to updated through the stream, a
 * node cut off from the cloud turns to cut off, and no request leaves loopback; a set under a
 * rollout plan is approved from its page, and the next domain starts. The screenshot is kept at
 * .ci/output/dashboard.png. `deno task test:browser` (a CI stage).
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { withRollingDashboard } from "../dashboard-fixture.ts";
import { withTarget } from "../e2e/target.ts";
import { Kube } from "../e2e/kube.ts";
import { setImage } from "../e2e/edgeroll-scenarios.ts";
import { nodeDriver } from "./driver.ts";

const screenshot = new URL("../../.ci/output/dashboard.png", import.meta.url).pathname;

Deno.test({
  name:
    "dashboard in Chromium: tiles turn to updated as the rollout goes, a cut-off node shows, nothing is fetched from elsewhere",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await Deno.mkdir(new URL("../../.ci/output/", import.meta.url), { recursive: true });
    const ns = "browser";
    await withTarget("sim", { nodes: 24, zones: 3 }, async (target) => {
      const kube = new Kube(target.kubeconfigPath);
      await withRollingDashboard(target, kube, ns, async (url, setPath) => {
        const browser = await nodeDriver("drive.mjs", [
          `${url}${setPath}`,
          screenshot,
        ]);
        try {
          const loaded = await browser.read();
          assertEquals(Object.keys(loaded.tiles!).length, 24);
          assertEquals(Object.values(loaded.tiles!).every((s) => s === "updated"), true);
          await setImage(kube, ns, "v2");
          // The page shows the new revision rolling, then every node on it.
          const updated = await browser.step("all-updated");
          assertEquals(Object.values(updated.tiles!).every((s) => s === "updated"), true);
          const node = target.nodes[0];
          await target.disconnect(node);
          const cut = await browser.step("cut-off", { node });
          assertEquals(cut.tiles![node], "cut-off");
          const done = await browser.step("done");
          assertEquals(done.elsewhere, []);
        } finally {
          await browser.close();
        }
        const shot = await Deno.stat(screenshot);
        assertEquals(shot.size > 10_000, true, `a screenshot of ${shot.size} bytes`);
      });
    });
  },
});

Deno.test({
  name:
    "dashboard in Chromium: a rollout plan's canary is approved from the page, and the next domain starts",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const ns = "browser-plan";
    await withTarget("sim", { nodes: 6, zones: 3 }, async (target) => {
      const kube = new Kube(target.kubeconfigPath);
      // zone-2 first: a one-node canary, then its approval; then every node, a zone at a time.
      const plan = {
        domainLabel: "topology.kubernetes.io/zone",
        firstDomains: ["zone-2"],
        steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
      };
      await withRollingDashboard(
        target,
        kube,
        ns,
        async (url, setPath) => {
          await setImage(kube, ns, "v2");
          const browser = await nodeDriver("drive.mjs", [`${url}${setPath}`, screenshot]);
          try {
            await browser.read();
            const approved = await browser.step("approve", { domain: "zone-1" });
            assertStringIncludes(String(approved.notice), "step 1 of 2 of revision");
            assertStringIncludes(String(approved.notice), "approved");
            const domains = approved.domains as Record<string, string>;
            assertEquals(Object.keys(domains), ["zone-2", "zone-1", "zone-3"], "the plan's order");
            assert(domains["zone-1"] !== "Pending", JSON.stringify(domains));
            const done = await browser.step("done");
            assertEquals(done.elsewhere, []);
          } finally {
            await browser.close();
          }
        },
        undefined,
        plan,
      );
    });
  },
});
