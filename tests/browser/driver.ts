/** Runs the browser drivers of this directory (Node, playwright-core, Debian's Chromium). */
const here = new URL("./", import.meta.url).pathname;

/** A line a driver writes: the step it finished, and what it read. */
export type Said = {
  step: string;
  tiles?: Record<string, string>;
  elsewhere?: string[];
  [measure: string]: unknown;
};

/**
 * A driver script of this directory under Node, with playwright-core from install.sh: a step
 * sent as a JSON line on its stdin, the JSON line it answers with read from its stdout.
 */
export async function nodeDriver(script: string, args: string[]) {
  const install = await new Deno.Command("bash", {
    args: [`${here}install.sh`],
    stderr: "inherit",
  }).output();
  if (!install.success) throw new Error("tests/browser/install.sh failed (its output is above)");
  const prefix = new TextDecoder().decode(install.stdout).trim();
  const child = new Deno.Command("node", {
    args: [`${here}${script}`, ...args],
    env: { PLAYWRIGHT_PREFIX: `${prefix}/node_modules` },
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const writer = child.stdin.getWriter();
  let buffer = "";
  const read = async (): Promise<Said> => {
    while (!buffer.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`${script} ended early (exit ${(await child.status).code})`);
      buffer += value;
    }
    const line = buffer.slice(0, buffer.indexOf("\n"));
    buffer = buffer.slice(buffer.indexOf("\n") + 1);
    return JSON.parse(line);
  };
  return {
    read,
    async step(step: string, extra: Record<string, string> = {}): Promise<Said> {
      await writer.write(new TextEncoder().encode(JSON.stringify({ step, ...extra }) + "\n"));
      return read();
    },
    async close() {
      await writer.close().catch(() => {});
      const timer = setTimeout(() => child.kill(), 10_000);
      await child.status;
      clearTimeout(timer);
      await lines.cancel().catch(() => {});
    },
  };
}
