// Drives Debian's Chromium through playwright-core (Node) on a dashboard page, in steps the Deno
// test paces over stdin/stdout: each line in names a step, each line out says it is done, with
// the tiles' and the plan's domains' states read from the page. argv: the page's URL, the
// screenshot's path; PLAYWRIGHT_PREFIX: where install.sh put playwright-core.
import { createInterface } from "node:readline";
import { launchChromium, say } from "./launch.mjs";

const [url, screenshot] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(url);
  const tiles = () =>
    page.$$eval(
      ".tiles .tile",
      (els) => Object.fromEntries(els.map((e) => [e.id.slice(2), e.className.slice(5)])),
    );
  say({ step: "loaded", tiles: await tiles() });
  const domains = () =>
    page.$$eval(
      ".domains li",
      (els) => Object.fromEntries(els.map((e) => [e.dataset.domain, e.dataset.domainState])),
    );
  for await (const line of createInterface({ input: process.stdin })) {
    const { step, node, domain } = JSON.parse(line);
    if (step === "all-updated") {
      // The stream turns tiles away from updated (the new revision is out), then every tile
      // to updated; the page is never reloaded.
      const updatedTiles = (every) =>
        page.waitForFunction(
          (every) => {
            const all = [...document.querySelectorAll(".tiles .tile")];
            const updated = all.filter((t) => t.classList.contains("updated")).length;
            return every ? updated === all.length : updated < all.length;
          },
          every,
          { timeout: 90_000 },
        );
      await updatedTiles(false);
      await updatedTiles(true);
    } else if (step === "cut-off") {
      await page.waitForSelector(`[id="n-${node}"].tile.cut-off`, { timeout: 90_000 });
      await page.screenshot({ path: screenshot, fullPage: true });
    } else if (step === "approve") {
      // As an operator: the plan waits for approval, the button asks first, the answer shows;
      // then `domain`, the next one, starts (leaves Pending) on the page, never reloaded.
      await page.waitForSelector('.plan[data-plan-state="AwaitingApproval"]', { timeout: 90_000 });
      page.once("dialog", (dialog) => dialog.accept());
      await page.click('button[data-action$="/approve"]');
      await page.waitForFunction(() => document.getElementById("notice").textContent !== "", null, {
        timeout: 30_000,
      });
      const notice = await page.textContent("#notice");
      await page.waitForSelector(
        `.domains li[data-domain="${domain}"]:not([data-domain-state="Pending"])`,
        { timeout: 90_000 },
      );
      say({ step, notice, domains: await domains(), tiles: await tiles() });
      continue;
    } else if (step === "done") {
      const elsewhere = requests.filter((u) => !u.startsWith(new URL(url).origin));
      say({ step, elsewhere });
      break;
    }
    say({
      step,
      tiles: await tiles(),
      updates: await page.evaluate(() => document.body.dataset.updates),
    });
  }
} finally {
  await browser.close();
}
