/**
 * `deno task bench:report`: the scale report (`docs/scale.md`) and its charts (`docs/scale/*.svg`)
 * from the results `deno task bench:peers` wrote (`bench/results/peers-*.json`). A size may be
 * measured in several invocations (a contender or two per session at 5,000 nodes): the three
 * newest runs of each contender, size and cut are taken together over the files (`mergeRuns`),
 * and the files they came from are named.
 *
 *   deno task bench:report [--out docs] [--results bench/results]
 *
 * `scale-report.test.ts` checks the committed report against the committed results.
 */
import { parseArgs } from "node:util";
import { markdownTable } from "./markdown-table.ts";
import { type Figure, figureText, mediansOf, type Row } from "./peers-figures.ts";

export interface Median {
  contender: string;
  row: string;
  cut: number;
  runs: number;
  completed: number;
  maxUnavailable: number;
  budgetUnavailable: number;
  figures: Record<string, Figure>;
}

export interface ResultFile {
  date: string;
  /** The commit measured and the command (bench:peers since 2026-12-07). */
  commit?: string;
  command?: string;
  machine: { cores: number; cpu: string; memoryGiB: number };
  nodes: number;
  runs: number;
  medians: Median[];
  /** Each run's row (bench:peers since it ran each contender more than once). */
  rows?: Row[];
}

/** A result file a measurement drew on: when, from which commit, by which command. */
export interface Source {
  file: string;
  date: string;
  commit?: string;
  command?: string;
}

const sourceOf = (name: string, result: ResultFile): Source => ({
  file: name,
  date: result.date,
  ...(result.commit ? { commit: result.commit } : {}),
  ...(result.command ? { command: result.command } : {}),
});

/** One measured contender at one size and cut, with where it came from. */
export interface Measured extends Median {
  nodes: number;
  date: string;
  machine: ResultFile["machine"];
  file: string;
  sources: Source[];
}

/**
 * A machine as a key: figures of two machines are never compared in one table (a faster machine
 * halves every CPU second and the floor's wall time).
 */
export const machineKey = ({ cores, cpu, memoryGiB }: ResultFile["machine"]) =>
  `${cores} cores, ${cpu}, ${memoryGiB} GiB`;

/** The newest measurement of each contender, size, cut and machine, sizes ascending. */
export function collect(
  files: { name: string; result: ResultFile; sources?: Source[] }[],
): Measured[] {
  const newest = new Map<string, Measured>();
  for (const { name, result, sources } of files) {
    for (const median of result.medians) {
      const key = `${result.nodes}/${machineKey(result.machine)}/${median.contender}/${median.cut}`;
      const seen = newest.get(key);
      if (seen && seen.date >= result.date) continue;
      newest.set(key, {
        ...median,
        nodes: result.nodes,
        date: result.date,
        machine: result.machine,
        file: name,
        sources: sources ?? [sourceOf(name, result)],
      });
    }
  }
  const order = ["floor", "kcm", "kruise", "edgeroll", "edgeroll-surge", "openyurt"];
  const rank = (c: string) => order.indexOf(c) === -1 ? order.length : order.indexOf(c);
  return [...newest.values()].sort((a, b) =>
    a.nodes - b.nodes || a.cut - b.cut || rank(a.contender) - rank(b.contender)
  );
}

/** Runs a report takes of each contender, size and cut: the issue's three. */
export const reportedRuns = 3;

/**
 * The runs of several invocations taken together: for each size, machine, contender and cut, the
 * rows of its `reportedRuns` newest runs over every file with rows (a size measured a contender or
 * two per session), their medians recomputed; one result per size and machine (figures of two
 * machines never share a median), named after the files it drew on. Files without rows pass as
 * they are.
 */
export function mergeRuns(
  files: { name: string; result: ResultFile }[],
): { name: string; result: ResultFile; sources?: Source[] }[] {
  const withRows = files.filter(({ result }) => result.rows?.length);
  const bySizeAndMachine = new Map<string, { name: string; result: ResultFile }[]>();
  for (const file of withRows) {
    const key = `${file.result.nodes}/${machineKey(file.result.machine)}`;
    bySizeAndMachine.set(key, [...bySizeAndMachine.get(key) ?? [], file]);
  }
  const merged = [...bySizeAndMachine.values()].flatMap((sized) => {
    const newestFirst = [...sized].sort((a, b) => b.result.date.localeCompare(a.result.date));
    const taken = new Map<string, { row: Row; name: string }[]>();
    for (const { name, result } of newestFirst) {
      // Within a file too the newest runs first: a file of more runs than are reported.
      for (const row of result.rows!.toSorted((a, b) => b.run - a.run)) {
        if (row.setAside) continue;
        const key = `${row.contender}/${row.cut}`;
        const runs = taken.get(key) ?? [];
        if (runs.length < reportedRuns) taken.set(key, [...runs, { row, name }]);
      }
    }
    // One result per set of files drawn on, so each measurement names its own sources.
    const bySources = new Map<string, Row[]>();
    for (const runs of taken.values()) {
      const sources = [...new Set(runs.map((r) => r.name))].sort().join(" + ");
      bySources.set(sources, [...bySources.get(sources) ?? [], ...runs.map((r) => r.row)]);
    }
    return [...bySources].map(([name, rows]) => {
      const drawnOn = newestFirst.filter((f) => name.split(" + ").includes(f.name));
      return {
        name,
        result: {
          ...drawnOn[0].result,
          medians: mediansOf(rows.toSorted((a, b) => a.run - b.run)),
          rows,
        },
        sources: drawnOn.map((f) => sourceOf(f.name, f.result)),
      };
    });
  });
  return [...files.filter((f) => !withRows.includes(f)), ...merged];
}

/** A chart's series: one contender's figure at each fleet size it was measured at. */
export interface Series {
  name: string;
  points: [number, number][];
}

export interface ChartSpec {
  title: string;
  yLabel: string;
  series: Series[];
}

const escapeXml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Up to `count` round values from 0 to at least `max`. */
function ticks(max: number, count = 5): number[] {
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  return Array.from({ length: Math.ceil(max / step) + 1 }, (_, i) => i * step);
}

const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b07aa1"];

/**
 * A line chart as SVG: fleet size on a log scale (the sizes measured), the figure on a linear one
 * from zero, one line and its points per series, a legend.
 */
export function lineChart({ title, yLabel, series }: ChartSpec): string {
  const [width, height] = [800, 360];
  const margin = { left: 64, right: 290, top: 36, bottom: 48 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const sizes = [...new Set(series.flatMap((s) => s.points.map(([x]) => x)))].sort((a, b) => a - b);
  const yTicks = ticks(Math.max(0, ...series.flatMap((s) => s.points.map(([, y]) => y))));
  const yMax = yTicks[yTicks.length - 1] || 1;
  const [lo, hi] = [Math.log(sizes[0] ?? 1), Math.log(sizes[sizes.length - 1] ?? 1)];
  const x = (n: number) =>
    margin.left + (hi === lo ? plotW / 2 : (Math.log(n) - lo) / (hi - lo) * plotW);
  const y = (v: number) => margin.top + plotH - v / yMax * plotH;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${margin.left}" y="20" font-size="14">${escapeXml(title)}</text>`,
  ];
  for (const t of yTicks) {
    out.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(t)}" y2="${y(t)}" ` +
        `stroke="#ddd"/>`,
      `<text x="${margin.left - 6}" y="${y(t) + 4}" text-anchor="end">${t}</text>`,
    );
  }
  for (const n of sizes) {
    out.push(
      `<line x1="${x(n)}" x2="${x(n)}" y1="${margin.top}" y2="${margin.top + plotH}" ` +
        `stroke="#eee"/>`,
      `<text x="${x(n)}" y="${margin.top + plotH + 16}" text-anchor="middle">` +
        `${n.toLocaleString("en-US")}</text>`,
    );
  }
  out.push(
    `<text x="${margin.left + plotW / 2}" y="${height - 8}" text-anchor="middle">` +
      `kwok nodes (log scale)</text>`,
    `<text transform="translate(14 ${margin.top + plotH / 2}) rotate(-90)" ` +
      `text-anchor="middle">${escapeXml(yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const color = palette[i % palette.length];
    const points = [...s.points].sort((a, b) => a[0] - b[0]);
    out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${
        points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(" ")
      }"/>`,
      ...points.map(([px, py]) =>
        `<circle cx="${x(px).toFixed(1)}" cy="${y(py).toFixed(1)}" r="3" fill="${color}"/>`
      ),
      `<rect x="${width - margin.right + 12}" y="${margin.top + i * 20}" width="12" height="12" ` +
        `fill="${color}"/>`,
      `<text x="${width - margin.right + 30}" y="${margin.top + i * 20 + 10}">` +
        `${escapeXml(s.name)}</text>`,
    );
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}

const contenderNames: Record<string, string> = {
  floor: "floor",
  kcm: "kube-controller-manager",
  kruise: "kruise-manager",
  edgeroll: "edgeroll",
  "edgeroll-surge": "edgeroll (surge)",
  openyurt: "edgeroll + DaemonSet controller (OpenYurt)",
};

/** The figures charted against fleet size (cut 0), each a file under `scale/`. */
const charted: { file: string; figure: string; title: string; yLabel: string }[] = [
  { file: "wall.svg", figure: "wall s", title: "Rollout wall time", yLabel: "seconds" },
  {
    file: "writes.svg",
    figure: "writes / node",
    title: "Writes per updated node",
    yLabel: "writes",
  },
  { file: "read.svg", figure: "MiB read", title: "Bytes read from the API server", yLabel: "MiB" },
  { file: "cpu.svg", figure: "CPU s", title: "Controller CPU", yLabel: "CPU seconds" },
  {
    file: "memory.svg",
    figure: "peak RSS MiB, summed",
    title: "Controller peak memory (working processes)",
    yLabel: "MiB",
  },
  {
    file: "apiserver-cpu.svg",
    figure: "kube-apiserver CPU s",
    title: "kube-apiserver CPU during the rollout",
    yLabel: "CPU seconds",
  },
];

/** A run its result marks as not counted, and why (`Row.setAside`). */
export interface SetAsideRun {
  nodes: number;
  file: string;
  row: string;
  run: number;
  wallSeconds: number;
  why: string;
  /** The machine it ran on (`machineKey`). */
  machine: string;
}

/** The runs of every file that are set aside, each with its file. */
export function setAsideRuns(files: { name: string; result: ResultFile }[]): SetAsideRun[] {
  return files.flatMap(({ name, result }) =>
    (result.rows ?? []).flatMap((r) =>
      r.setAside
        ? [{
          nodes: r.nodes,
          file: name.split("/").pop()!,
          row: r.row,
          run: r.run,
          wallSeconds: r.wallSeconds,
          why: r.setAside,
          machine: machineKey(result.machine),
        }]
        : []
    )
  );
}

/** The report: a Markdown page and its charts (file name → SVG). */
export function renderReport(
  measured: Measured[],
  setAside: SetAsideRun[] = [],
): { markdown: string; charts: [string, string][] } {
  // One table per size and machine, the newest machine's first.
  const tables = [
    ...new Map(
      measured.toSorted((a, b) => a.nodes - b.nodes || b.date.localeCompare(a.date)).map((m) => [
        `${m.nodes}/${machineKey(m.machine)}`,
        { nodes: m.nodes, machine: machineKey(m.machine) },
      ]),
    ).values(),
  ];
  // The charts draw one machine's figures: the one that measured the most.
  const measuredOn = (machine: string) =>
    measured.filter((m) => machineKey(m.machine) === machine).length;
  const chartMachine = [...new Set(measured.map((m) => machineKey(m.machine)))]
    .sort((a, b) => measuredOn(b) - measuredOn(a))[0];
  const sections = tables.map(({ nodes, machine }) => {
    const here = measured.filter((m) => m.nodes === nodes && machineKey(m.machine) === machine);
    const asideHere = setAside.filter((r) => r.nodes === nodes && r.machine === machine).map((r) =>
      `- Set aside, not in the medians: ${r.row}, run ${r.run} of ${r.file} (${
        r.wallSeconds.toFixed(1)
      } s): ${r.why}.`
    );
    const floorWall = (cut: number) =>
      here.find((m) => m.contender === "floor" && m.cut === cut)?.figures["wall s"]?.median;
    const rows = here.map((m) => {
      const f = m.figures;
      const floor = floorWall(m.cut);
      return [
        contenderNames[m.contender] ?? m.contender,
        String(m.cut),
        `${m.completed}/${m.runs}`,
        figureText(f["wall s"], 1),
        floor ? (f["wall s"].median / floor).toFixed(2) : "—",
        figureText(f["× minimum"], 2),
        figureText(f["requests / node"], 2),
        figureText(f["writes / node"], 2),
        figureText(f["409s"], 0),
        figureText(f["MiB read"], 1),
        figureText(f["CPU s"], 1),
        `${f["peak RSS MiB, summed"]?.median.toFixed(0) ?? "—"}` +
        (f["standby RSS MiB"]?.median ? ` + ${f["standby RSS MiB"].median.toFixed(0)}` : ""),
        `${f["kube-apiserver CPU s"]?.median.toFixed(1) ?? "—"}, ` +
        `${f["kube-apiserver peak MiB"]?.median.toFixed(0) ?? "—"}`,
        `${f["etcd CPU s"]?.median.toFixed(1) ?? "—"}, ${
          f["etcd peak MiB"]?.median.toFixed(0) ?? "—"
        }`,
        `${m.maxUnavailable} / ${m.budgetUnavailable}`,
      ];
    });
    const sources = [
      ...new Set(
        here.flatMap((m) =>
          m.sources.map(({ file, date, commit, command }) =>
            `${file.split("/").pop()} (${date.slice(0, 10)}, ${
              commit ? `at ${commit}` : "commit not recorded"
            }): ${command ? `\`${command}\`` : "command not recorded"}`
          )
        ),
      ),
    ];
    return [
      `## ${nodes.toLocaleString("en-US")} nodes, ${machine}`,
      "",
      "Median of the runs, range in brackets; from:",
      "",
      ...sources.map((source) => `- ${source}`),
      "",
      markdownTable([
        "contender",
        "cut",
        "runs done",
        "wall s",
        "× floor",
        "× minimum",
        "requests / node",
        "writes / node",
        "409s",
        "MiB read",
        "CPU s",
        "peak RSS MiB (+ standby)",
        "kube-apiserver CPU s, peak MiB",
        "etcd CPU s, peak MiB",
        "max unavailable / budget",
      ], rows),
      "",
      ...(asideHere.length > 0 ? [...asideHere, ""] : []),
    ].join("\n");
  });
  const charts = charted.map(({ file, figure, title, yLabel }): [string, string] => {
    const contenders = [...new Set(measured.map((m) => m.contender))];
    const series = contenders.map((contender) => ({
      name: contenderNames[contender] ?? contender,
      points: measured
        .filter((m) =>
          m.contender === contender && m.cut === 0 && m.figures[figure] &&
          machineKey(m.machine) === chartMachine
        )
        .map((m): [number, number] => [m.nodes, m.figures[figure].median]),
    })).filter((s) => s.points.length > 0);
    return [file, lineChart({ title, yLabel, series })];
  });
  const markdown = [
    "# edgeroll at fleet size, beside its peers",
    "",
    "Generated by `deno task bench:report` from `bench/results/peers-*.json`; do not edit. How the",
    'bench measures is in the README ("Beside its peers") and ADR 0031.',
    "",
    `The charts draw the figures measured on ${chartMachine}.`,
    "",
    ...charts.map(([file]) => `![${file}](scale/${file})`),
    "",
    ...sections,
  ].join("\n");
  return { markdown, charts };
}

/**
 * The report of every result under `dir` with medians (a one-run result from before `--runs` is
 * left out, and named in `leftOut`).
 */
export function reportOfResults(dir: string) {
  const names = [...Deno.readDirSync(dir)]
    .filter((e) => e.isFile && /^peers-.*\.json$/.test(e.name))
    .map((e) => `${dir}/${e.name}`)
    .sort();
  const files = names.map((name) => ({
    name,
    result: JSON.parse(Deno.readTextFileSync(name)) as ResultFile,
  }));
  const withMedians = files.filter(({ result }) => Array.isArray(result.medians));
  return {
    ...renderReport(collect(mergeRuns(withMedians)), setAsideRuns(withMedians)),
    leftOut: files.filter((f) => !withMedians.includes(f)).map((f) => f.name),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      out: { type: "string", default: "docs" },
      results: { type: "string", default: "bench/results" },
    },
  });
  const { markdown, charts, leftOut } = reportOfResults(values.results!);
  for (const name of leftOut) {
    console.error(`bench:report: ${name} has no medians (a bench before --runs): left out`);
  }
  Deno.mkdirSync(`${values.out}/scale`, { recursive: true });
  Deno.writeTextFileSync(`${values.out}/scale.md`, markdown);
  for (const [file, svg] of charts) Deno.writeTextFileSync(`${values.out}/scale/${file}`, svg);
  console.log(`bench:report: ${values.out}/scale.md and ${charts.length} charts`);
}
