/**
 * kube-apiserver's heap through a contender's window (issue 34: a controller that saves its own
 * memory by loading the API server is not cheaper): its `/debug/pprof/heap` fetched every few
 * seconds with the admin's client certificate, each profile written with the API server's
 * resident memory at that instant in its name, for `go tool pprof -top` to read after. Needs the
 * API server started with `--profiling=true` (`upCluster({ profiling: true })`).
 */
import type { ClusterState } from "../cluster/control-plane.ts";
import { residentMiB } from "../tests/processes.ts";

export class HeapProfiles {
  readonly #client: Deno.HttpClient;
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #started = Date.now();
  readonly #written: string[] = [];
  /** One fetch at a time: a slow answer delays the next sample rather than piling up. */
  #inFlight: Promise<void> = Promise.resolve();
  /**
   * The first sample that failed: kept for `stop` to throw, since a rejection left unhandled
   * between two ticks would end the bench before its `finally` stops the cluster.
   */
  #failed: unknown;

  constructor(
    private readonly state: ClusterState,
    private readonly dir: string,
    private readonly label: string,
    everyMs = 5000,
  ) {
    const pki = `${state.workDir}/pki`;
    this.#client = Deno.createHttpClient({
      caCerts: [Deno.readTextFileSync(`${pki}/ca.crt`)],
      cert: Deno.readTextFileSync(`${pki}/admin.crt`),
      key: Deno.readTextFileSync(`${pki}/admin.key`),
    });
    Deno.mkdirSync(dir, { recursive: true });
    this.#timer = setInterval(() => {
      this.#inFlight = this.#inFlight.then(() => this.#failed ? undefined : this.#sample())
        .catch((err) => {
          this.#failed = err;
        });
    }, everyMs);
  }

  /** Stops sampling; the profiles written, oldest first. */
  async stop(): Promise<string[]> {
    clearInterval(this.#timer);
    await this.#inFlight;
    try {
      if (this.#failed) throw this.#failed;
      await this.#sample();
    } finally {
      this.#client.close();
    }
    return this.#written;
  }

  async #sample(): Promise<void> {
    const apiserver = this.state.processes.find((p) => p.name === "kube-apiserver");
    if (!apiserver) throw new Error("no kube-apiserver in the cluster's processes");
    const rss = residentMiB(apiserver.pid) ?? 0;
    const response = await fetch(`${this.state.server}/debug/pprof/heap`, {
      client: this.#client,
    });
    if (!response.ok) {
      throw new Error(
        `GET ${this.state.server}/debug/pprof/heap: ${response.status} (is --profiling on?)`,
      );
    }
    const seconds = String(Math.round((Date.now() - this.#started) / 1000)).padStart(4, "0");
    const path = `${this.dir}/${this.label}-${seconds}s-${Math.round(rss)}MiB.pb.gz`;
    await Deno.writeFile(path, new Uint8Array(await response.arrayBuffer()));
    this.#written.push(path);
  }
}
