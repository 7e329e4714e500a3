import { assertEquals, assertStringIncludes } from "@std/assert";
import {
  collect,
  lineChart,
  type Median,
  mergeRuns,
  renderReport,
  reportOfResults,
  type ResultFile,
  setAsideRuns,
} from "./scale-report.ts";
import type { Row } from "./peers-figures.ts";

const figure = (median: number) => ({ median, min: median - 1, max: median + 1 });
const median = (contender: string, wall: number, cut = 0): Median => ({
  contender,
  row: contender,
  cut,
  runs: 3,
  completed: 3,
  maxUnavailable: 100,
  budgetUnavailable: 100,
  figures: { "wall s": figure(wall), "writes / node": figure(2), "CPU s": figure(wall / 10) },
});
const file = (nodes: number, date: string, medians: Median[]): ResultFile => ({
  date,
  machine: { cores: 2, cpu: "test cpu", memoryGiB: 24 },
  nodes,
  runs: 3,
  medians,
});

/** One run's row of `contender` at `nodes`: 3 requests and 2 writes per node, 10% unavailable. */
const runRow = (nodes: number, contender: string, run: number, wallSeconds: number): Row => ({
  run,
  contender,
  row: contender,
  nodes,
  cut: 0,
  target: nodes,
  updated: nodes,
  completed: true,
  wallSeconds,
  minimumSeconds: 20,
  requests: { requests: 3 * nodes, writes: 2 * nodes, conflicts: 0, byKind: {} },
  bytesRead: 2 ** 20,
  cpuSeconds: 1,
  peakRssMiB: [100],
  standbyPeakRssMiB: [],
  maxUnavailable: nodes / 10,
  budgetUnavailable: nodes / 10,
  controlPlane: {
    "kube-apiserver": { cpuSeconds: 1, peakMiB: 1 },
    etcd: { cpuSeconds: 1, peakMiB: 1 },
  },
  watchRestarts: 0,
});

Deno.test("collect keeps the newest median of each contender, size and cut, sizes ascending", () => {
  const measured = collect([
    { name: "b.json", result: file(1000, "2026-11-28", [median("edgeroll", 35)]) },
    {
      name: "a.json",
      result: file(1000, "2026-11-25", [median("edgeroll", 31), median("kcm", 100)]),
    },
    {
      name: "c.json",
      result: file(300, "2026-11-28", [median("edgeroll", 24), median("floor", 23)]),
    },
  ]);
  assertEquals(
    measured.map((m) => `${m.nodes} ${m.contender} ${m.figures["wall s"].median} ${m.file}`),
    [
      "300 floor 23 c.json",
      "300 edgeroll 24 c.json",
      "1000 kcm 100 a.json",
      "1000 edgeroll 35 b.json",
    ],
  );
});

Deno.test("a line chart draws each series' points left to right by fleet size, higher figures higher", () => {
  const svg = lineChart({
    title: "wall <time>",
    yLabel: "seconds",
    series: [
      { name: "edgeroll", points: [[5000, 60], [300, 24], [1000, 35]] },
      { name: "kcm & co", points: [[300, 36], [1000, 104]] },
    ],
  });
  assertStringIncludes(svg, "wall &lt;time&gt;");
  assertStringIncludes(svg, "kcm &amp; co");
  const lines = [...svg.matchAll(/<polyline [^>]*points="([^"]+)"/g)].map((m) =>
    m[1].split(" ").map((p) => p.split(",").map(Number))
  );
  assertEquals(lines.map((l) => l.length), [3, 2]);
  const [edgeroll] = lines;
  assertEquals(edgeroll[0][0] < edgeroll[1][0] && edgeroll[1][0] < edgeroll[2][0], true);
  // SVG's y grows downwards: 60 s is drawn above 24 s.
  assertEquals(edgeroll[2][1] < edgeroll[0][1], true);
  assertEquals([...svg.matchAll(/<circle /g)].length, 5);
});

Deno.test("the report has a table per size with wall time against that size's floor, and six charts", () => {
  const { markdown, charts } = renderReport(collect([
    {
      name: "r.json",
      result: file(1000, "2026-11-28", [median("floor", 34), median("edgeroll", 35.7)]),
    },
  ]));
  assertStringIncludes(markdown, "## 1,000 nodes");
  const edgeroll = markdown.split("\n").find((l) => l.startsWith("| edgeroll "))!;
  assertStringIncludes(edgeroll, "| 1.05 ");
  assertStringIncludes(edgeroll, "35.7 (34.7–36.7)");
  assertEquals(charts.map(([name]) => name), [
    "wall.svg",
    "writes.svg",
    "read.svg",
    "cpu.svg",
    "memory.svg",
    "apiserver-cpu.svg",
  ]);
  // A figure no contender has (MiB read here) draws an empty chart, not a made-up line.
  assertEquals(charts.find(([name]) => name === "read.svg")![1].includes("<polyline"), false);
});

Deno.test("docs/scale.md and its charts are the committed results' (run `deno task bench:report`)", () => {
  const root = new URL("../", import.meta.url).pathname;
  const { markdown, charts } = reportOfResults(`${root}bench/results`);
  assertEquals(Deno.readTextFileSync(`${root}docs/scale.md`), markdown);
  for (const [file, svg] of charts) {
    assertEquals(Deno.readTextFileSync(`${root}docs/scale/${file}`), svg, file);
  }
});

Deno.test("runs of one size from several files are taken together: the three newest of each contender", () => {
  const row = (contender: string, run: number, wallSeconds: number) =>
    runRow(5000, contender, run, wallSeconds);
  const result = (date: string, rows: Row[]): ResultFile => ({
    ...file(5000, date, []),
    runs: rows.length,
    rows,
  });
  const merged = mergeRuns([
    { name: "old.json", result: result("2026-11-27T10:00", [row("floor", 1, 400)]) },
    {
      name: "mid.json",
      result: result("2026-11-28T10:00", [row("floor", 1, 150), row("floor", 2, 160)]),
    },
    {
      name: "new.json",
      result: result("2026-11-28T12:00", [row("floor", 1, 90), row("kcm", 1, 500)]),
    },
    { name: "medians-only.json", result: file(1000, "2026-11-25", [median("kcm", 100)]) },
    {
      name: "loaded.json",
      result: result("2026-11-28T13:00", [{
        ...row("kcm", 1, 900),
        setAside: "tests ran beside it",
      }]),
    },
  ]);
  const measured = collect(merged);
  assertEquals(
    measured.map((m) => [m.nodes, m.contender, m.runs, m.figures["wall s"], m.file]),
    [
      [1000, "kcm", 3, figure(100), "medians-only.json"],
      [5000, "floor", 3, { median: 150, min: 90, max: 160 }, "mid.json + new.json"],
      [5000, "kcm", 1, { median: 500, min: 500, max: 500 }, "new.json"],
    ],
  );
  // The run set aside counts in no median, and the report names it under its size.
  const aside = setAsideRuns([{
    name: "results/loaded.json",
    result: result("2026-11-28T13:00", [{
      ...row("kcm", 1, 900),
      setAside: "tests ran beside it",
    }]),
  }]);
  assertStringIncludes(
    renderReport(measured, aside).markdown,
    "- Set aside, not in the medians: kcm, run 1 of loaded.json (900.0 s): tests ran beside it.",
  );
});

Deno.test("within one file of more runs than a report takes, the newest runs count, and each source names its commit and command", () => {
  const base = collect(mergeRuns([{ name: "x.json", result: file(300, "2026-12-07", []) }]));
  assertEquals(base, []);
  const measured = collect(mergeRuns([{
    name: "results/four-runs.json",
    result: {
      ...file(300, "2026-12-07T16:00", []),
      commit: "0123456789ab",
      command: "deno task bench:peers --nodes 300 --runs 4",
      runs: 4,
      rows: [99, 30, 31, 32].map((wall, i) => runRow(300, "edgeroll", i + 1, wall)),
    },
  }]));
  assertEquals(measured.map((m) => [m.runs, m.figures["wall s"].max]), [[3, 32]]);
  assertEquals(measured[0].figures["requests / node"].median, 3);
  const { markdown } = renderReport(measured);
  assertStringIncludes(
    markdown,
    "- four-runs.json (2026-12-07, at 0123456789ab): `deno task bench:peers --nodes 300 --runs 4`",
  );
  assertStringIncludes(markdown, "| requests / node  |");
});

Deno.test("figures of two machines at one size are two tables, never one, and the charts draw one machine", () => {
  const on = (cpu: string, date: string, medians: Median[]): ResultFile => ({
    ...file(1000, date, medians),
    machine: { cores: 2, cpu, memoryGiB: 24 },
  });
  const measured = collect([
    {
      name: "old.json",
      result: on("slow cpu", "2026-11-28", [median("floor", 34), median("kcm", 100)]),
    },
    { name: "new.json", result: on("fast cpu", "2026-12-07", [median("floor", 22)]) },
  ]);
  const { markdown } = renderReport(measured);
  const headings = markdown.split("\n").filter((l) => l.startsWith("## "));
  assertEquals(headings, [
    "## 1,000 nodes, 2 cores, fast cpu, 24 GiB",
    "## 1,000 nodes, 2 cores, slow cpu, 24 GiB",
  ]);
  // kube-controller-manager against the floor of its own machine: 100 / 34.
  assertStringIncludes(markdown, "| 2.94    |");
  assertStringIncludes(
    markdown,
    "The charts draw the figures measured on 2 cores, slow cpu, 24 GiB.",
  );
});
