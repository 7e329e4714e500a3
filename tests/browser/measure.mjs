// Measures a dashboard page in Debian's Chromium for bench/dashboard.ts: the time to the first
// applied stream update after navigation, then, for each `update` step, the wall-clock time at
// which the page's script applied the update that turned the step's node to updated (the bench
// compares it with when it changed the fleet).
import { createInterface } from "node:readline";
import { launchChromium, say } from "./launch.mjs";

const [url] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const started = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.updates === "1", null, {
    timeout: 60_000,
  });
  say({ step: "loaded", ms: Date.now() - started });
  for await (const line of createInterface({ input: process.stdin })) {
    const { step, node } = JSON.parse(line);
    if (step === "done") {
      say({ step });
      break;
    }
    // The tile the change turns: its class is set by the update that carries it.
    await page.waitForSelector(`[id="n-${node}"].tile.updated`, {
      state: "attached",
      timeout: 60_000,
    });
    // When the page's script had applied it, by its own clock (this machine's).
    say({ step, at: Number(await page.evaluate(() => document.body.dataset.updatedAt)) });
  }
} finally {
  await browser.close();
}
