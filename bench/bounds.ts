/**
 * The adversarial figures of issue 13, measured again: what oversized bodies and batches,
 * floods of wrong tokens and hundreds of thousands of node names cost the controller and the
 * API server. sim and `serve` (TokenReview mode, the image's V8 flags) each in its own
 * process. Prints a table; never fails.
 *
 *   deno run -A bench/bounds.ts [--names N]
 */
import { parseArgs } from "node:util";
import { freePort } from "../cluster/processes.ts";
import { markdownTable } from "./markdown-table.ts";
import {
  imageEnv,
  residentMiB,
  spawnMain,
  stop,
  untilAnswers,
  withSimProcess,
} from "../tests/processes.ts";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { names: { type: "string" } },
  strict: true,
});
const distinctNames = Number(flags.names ?? 400_000);

/** Resident MiB of the running controller, as the table prints it. */
const resident = (pid: number) => residentMiB(pid)!.toFixed(0);

const rows: string[][] = [];

await withSimProcess({ nodes: 100, speed: 10 }, async (sim) => {
  const kubeconfig = Deno.readTextFileSync(sim.kubeconfigPath);
  const simToken = /token: (\S+)/.exec(kubeconfig)?.[1];
  if (!simToken) throw new Error(`no token in ${sim.kubeconfigPath}`);
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  // The sim's admin token passes the controller's TokenReview, as a relay's would.
  const child = spawnMain([
    "serve",
    "--host=127.0.0.1",
    `--port=${port}`,
    `--kubeconfig=${sim.kubeconfigPath}`,
    "--allow=sim-admin",
  ], imageEnv());
  try {
    await untilAnswers(`${url}/readyz`, child);
    const reviews = async () => {
      const stats = await (await fetch(`${sim.url}/sim/v1/stats`)).json();
      const byVerb = (stats.requests.byResource as Record<string, Record<string, number>>)
        .tokenreviews ?? {};
      return Object.values(byVerb).reduce((n, count) => n + count, 0);
    };
    const post = async (path: string, init: RequestInit) => {
      const response = await fetch(`${url}${path}`, { method: "POST", ...init });
      await response.body?.cancel();
      return response.status;
    };
    const statuses = (list: number[]) =>
      [...new Set(list)].map((s) => `${s} × ${list.filter((x) => x === s).length}`).join(", ");
    const idle = resident(child.pid);

    // 1. 50 MB bodies on each mutating route, with a valid token.
    const big = new Uint8Array(50 * 1024 * 1024);
    const bodyStatuses: number[] = [];
    for (const path of ["/events", "/tick", "/reconcile/advanceddaemonsets/default/x"]) {
      for (let i = 0; i < 3; i++) {
        bodyStatuses.push(
          await post(path, { headers: { authorization: `Bearer ${simToken}` }, body: big }),
        );
      }
    }
    rows.push([
      "9 bodies of 50 MB on /events, /tick, /reconcile",
      statuses(bodyStatuses),
      `${idle} → ${resident(child.pid)} MiB`,
      "was read whole: 145 → 791 MiB",
    ]);

    // 2. A batch of 10,000 events.
    const batch = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => ({
      specversion: "1.0",
      id: String(i),
      source: "bench",
      type: "dev.knative.apiserver.resource.update",
      data: { apiVersion: "v1", kind: "Node", metadata: { name: `edge-${i}` } },
    })));
    rows.push([
      "one batch of 10,000 CloudEvents",
      statuses([
        await post("/events", {
          headers: {
            authorization: `Bearer ${simToken}`,
            "content-type": "application/cloudevents-batch+json",
          },
          body: batch,
        }),
      ]),
      "",
      "was accepted",
    ]);

    // 3. The same wrong token 200 times; then 2,000 distinct wrong tokens as fast as they go.
    let before = await reviews();
    const same = crypto.randomUUID();
    const sameStatuses: number[] = [];
    for (let i = 0; i < 200; i++) {
      sameStatuses.push(await post("/tick", { headers: { authorization: `Bearer ${same}` } }));
    }
    rows.push([
      "200 calls with one wrong token",
      statuses(sameStatuses),
      `${(await reviews()) - before} TokenReviews`,
      "was 200 TokenReviews",
    ]);
    before = await reviews();
    const started = performance.now();
    const floodStatuses = await Promise.all(
      Array.from(
        { length: 2000 },
        () => post("/tick", { headers: { authorization: `Bearer ${crypto.randomUUID()}` } }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const flood = (await reviews()) - before;
    rows.push([
      "2,000 distinct wrong tokens at once",
      statuses(floodStatuses),
      `${flood} TokenReviews in ${seconds.toFixed(1)} s`,
      "one review each",
    ]);

    // 4. Distinct node names in events, 1,000 per batch.
    const beforeNames = resident(child.pid);
    const nameStatuses = new Set<number>();
    for (let sent = 0; sent < distinctNames; sent += 1000) {
      const names = JSON.stringify(Array.from({ length: 1000 }, (_, i) => ({
        specversion: "1.0",
        id: String(sent + i),
        source: "bench",
        type: "dev.knative.apiserver.resource.update",
        data: {
          apiVersion: "v1",
          kind: "Node",
          metadata: { name: `fuzz-${sent + i}`, labels: { zone: "z" } },
        },
      })));
      nameStatuses.add(
        await post("/events", {
          headers: {
            authorization: `Bearer ${simToken}`,
            "content-type": "application/cloudevents-batch+json",
          },
          body: names,
        }),
      );
    }
    const afterNames = resident(child.pid);
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    rows.push([
      `${distinctNames.toLocaleString("en")} distinct node names in events`,
      [...nameStatuses].join(", "),
      `${beforeNames} → ${afterNames} MiB, ${resident(child.pid)} MiB 20 s later`,
      "was ~600 MiB, 420 after",
    ]);
  } finally {
    await stop([child]);
  }
});

console.log("\ncontroller under bad input (serve in TokenReview mode against sim)\n");
console.log(markdownTable(["input", "answers", "cost", "before issue 13"], rows));
