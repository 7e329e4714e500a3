/**
 * `deno task bench`: runs every benchmark in turn, each in its own process (so one's heap and
 * timers do not disturb the next), and waits for it. Each file prints its own table when run as
 * the main module. Add a benchmark by adding its file to the list.
 */
const benchmarks = [
  "engine.ts",
  "sim-behaviour.ts",
  "sim.ts",
  "controller.ts",
  "bounds.ts",
  "wire-forms.ts",
];

for (const file of benchmarks) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", new URL(file, import.meta.url).pathname],
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const status = await child.status;
  if (!status.success) console.error(`bench/${file} exited with code ${status.code}`);
  console.log();
}
