/**
 * Prometheus itself for the analysis scenarios (ADR 0055): Debian's binary (`install.sh`, cached
 * under ~/.cache/edgeroll), started on loopback by PID with no service manager, scraping every
 * second an exporter the test controls (an error ratio per zone). Stopped by its PID in `finally`,
 * and can be stopped and started again on the same port mid-scenario (its storage kept).
 */
import { freePort, logTail, startDetached, stopProcesses } from "../../cluster/processes.ts";
import { serveOnLoopback } from "../loopback-server.ts";

/** The exporter's metric: the share of an agent's requests that failed, by zone. */
export const errorRatioMetric = "edge_agent_error_ratio";

let installed: Promise<string> | undefined;

/** The binary's path, unpacked from Debian's package on first use (tests/prometheus/install.sh). */
export function prometheusBinary(): Promise<string> {
  installed ??= (async () => {
    const script = new URL("./install.sh", import.meta.url).pathname;
    const { code, stdout, stderr } = await new Deno.Command("bash", {
      args: [script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    if (code !== 0) {
      throw new Error(`tests/prometheus/install.sh failed (${code}): ${text.decode(stderr)}`);
    }
    return text.decode(stdout).trim().split("\n").pop()!;
  })();
  return installed;
}

export interface Exporter {
  /** `127.0.0.1:PORT`, what Prometheus scrapes. */
  host: string;
  /** The zone's ratio from now on; undefined takes its series away. */
  set(zone: string, ratio: number | undefined): void;
  stop(): Promise<void>;
}

/** A `/metrics` page in Prometheus's text format with one series per zone set. */
export async function startExporter(): Promise<Exporter> {
  const ratios = new Map<string, number>();
  const server = await serveOnLoopback(() => {
    const lines = [`# TYPE ${errorRatioMetric} gauge`];
    for (const [zone, ratio] of ratios) lines.push(`${errorRatioMetric}{zone="${zone}"} ${ratio}`);
    return new Response(lines.join("\n") + "\n", {
      headers: { "content-type": "text/plain; version=0.0.4" },
    });
  });
  return {
    host: new URL(server.url).host,
    set(zone, ratio) {
      if (ratio === undefined) ratios.delete(zone);
      else ratios.set(zone, ratio);
    },
    stop: () => server.stop(),
  };
}

export interface PrometheusProcess {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `127.0.0.1:PORT`, for the controller's --analysis-hosts. */
  host: string;
  /** Stops it (SIGTERM by PID): its queries are refused until `start`. */
  stop(): Promise<void>;
  /** Starts it again on the same port and storage; resolves once it is ready. */
  start(): Promise<void>;
  /** Resolves once its last scrape of the exporter has the zone's ratio. */
  scraped(zone: string, ratio: number): Promise<void>;
}

/**
 * Prometheus on a free loopback port, scraping `exporter` every second, for the length of `body`;
 * stopped by its PID after, whatever happens.
 */
export async function withPrometheus(
  exporter: Exporter,
  body: (prometheus: PrometheusProcess) => Promise<void>,
): Promise<void> {
  const binary = await prometheusBinary();
  const dir = await Deno.makeTempDir({ prefix: "edgeroll-prometheus-" });
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  await Deno.writeTextFile(
    `${dir}/prometheus.yml`,
    [
      "global:",
      "  scrape_interval: 1s",
      "scrape_configs:",
      "  - job_name: edge-agent",
      "    static_configs:",
      `      - targets: ["${exporter.host}"]`,
      "",
    ].join("\n"),
  );
  const logPath = `${dir}/prometheus.log`;
  let running: { pid: number; binary: string } | undefined;
  const start = async () => {
    running = await startDetached("prometheus", binary, [
      `--config.file=${dir}/prometheus.yml`,
      `--storage.tsdb.path=${dir}/data`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ], logPath);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ready = await fetch(`${url}/-/ready`).then(async (r) => {
        await r.body?.cancel();
        return r.ok;
      }, () => false);
      if (ready) return;
      if (Date.now() > deadline) {
        throw new Error(`Prometheus did not get ready on ${url}: ${logTail(logPath)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const stop = async () => {
    if (running) await stopProcesses([running]);
    running = undefined;
  };
  const scraped = async (zone: string, ratio: number) => {
    const query = encodeURIComponent(`${errorRatioMetric}{zone="${zone}"}`);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const answer = await fetch(`${url}/api/v1/query?query=${query}`).then(
        (r) => r.json(),
        () => undefined,
      );
      const value = answer?.data?.result?.[0]?.value?.[1];
      if (value !== undefined && Number(value) === ratio) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`Prometheus did not scrape ${zone}=${ratio} within 30 s`);
  };
  try {
    await start();
    await body({ url, host: `127.0.0.1:${port}`, stop, start, scraped });
  } finally {
    await stop();
    await Deno.remove(dir, { recursive: true });
  }
}
