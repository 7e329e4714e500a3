// Debian's Chromium through playwright-core, as the machine allows it: headless, and with no
// background networking (the build machines refuse every connection outside loopback).
import { createRequire } from "node:module";

export function launchChromium() {
  // playwright-core lives in ~/.cache/edgeroll (install.sh), not beside this file.
  const { chromium } = createRequire(`${process.env.PLAYWRIGHT_PREFIX}/`)("playwright-core");
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** One JSON line on stdout: how the driver answers its Deno side. */
export const say = (message) => process.stdout.write(JSON.stringify(message) + "\n");
