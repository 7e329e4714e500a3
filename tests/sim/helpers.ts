// deno-lint-ignore-file no-explicit-any -- Status bodies and watch objects are untyped JSON
/**
 * Shared by the fidelity tests: a simulator per test (port 0, stopped in `finally`) and the
 * real `kubectl` binary pointed at it with a private discovery cache.
 */
import * as k8s from "@kubernetes/client-node";
import { type Sim, type SimOptions, startSim } from "../../sim/start.ts";
import type { StartBehaviour } from "../../sim/behaviour.ts";
import { type KubectlResult, runKubectl } from "../../cluster/kubectl.ts";

export async function withSim(
  options: SimOptions,
  body: (sim: Sim, kc: k8s.KubeConfig) => Promise<void>,
): Promise<void> {
  // Simulated time runs 50× faster so pulls, starts and graceful deletes take milliseconds.
  const sim = await startSim({ nodes: 3, speed: 50, ...options });
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sim.kubeconfigPath);
    await body(sim, kc);
  } finally {
    await sim.stop();
  }
}

/** A cluster where nothing moves on its own: no nodes, kubelets or controllers. */
export const stillCluster: StartBehaviour = () => ({ stop() {} });

/** Runs the real kubectl against `sim` with a private discovery cache; `stdin` is piped in. */
export async function kubectl(sim: Sim, args: string[], stdin?: string): Promise<KubectlResult> {
  const cacheDir = await Deno.makeTempDir({ prefix: "edgeroll-kubectl-cache-" });
  try {
    return await runKubectl(sim.kubeconfigPath, ["--cache-dir", cacheDir, ...args], stdin);
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
}

/** Raw HTTP to the simulator, for what no client library exposes (Tables, admin API). */
export async function request(
  sim: Sim,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${sim.url}${path}`, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON: keep the text */ }
  return { status: response.status, body };
}

export function apiCode(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}

/** The code and Status body a client-node call failed with (it must fail). */
export async function statusOf(promise: Promise<unknown>): Promise<{ code?: number; body: any }> {
  try {
    await promise;
  } catch (err) {
    const body = (err as k8s.ApiException<string>).body;
    return { code: apiCode(err), body: typeof body === "string" ? JSON.parse(body) : body };
  }
  throw new Error("expected the call to fail");
}

/**
 * The events of a client-node watch of `path`, opened before `act` runs, until `until` says
 * enough (or the server ends the stream).
 */
export async function collectWatch(
  kc: k8s.KubeConfig,
  path: string,
  params: Record<string, string | boolean>,
  until: (events: [string, any][]) => boolean,
  act: () => Promise<void> = async () => {},
): Promise<[string, any][]> {
  const events: [string, any][] = [];
  const { promise: finished, resolve } = Promise.withResolvers<void>();
  const controller = await new k8s.Watch(kc).watch(path, params, (type, object) => {
    events.push([type, object]);
    if (until(events)) resolve();
  }, () => resolve());
  try {
    await act();
    await finished;
  } finally {
    controller.abort();
  }
  return events;
}
