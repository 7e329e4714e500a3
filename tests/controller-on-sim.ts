// deno-lint-ignore-file no-explicit-any -- answers of the controller are untyped JSON
/**
 * For integration tests and the demo: the simulator with a working cluster (kubelets,
 * scheduler, node lifecycle) and the CRD installed, and the controller served on a real port
 * against it with the real client-node.
 */
import * as k8s from "@kubernetes/client-node";
import { advancedDaemonSetCrd } from "../api/crd.ts";
import { startClusterBehaviour } from "../sim/cluster/mod.ts";
import { type Sim, type SimOptions, startSim } from "../sim/start.ts";
import type { Logger } from "../cli/log.ts";
import { memoryLogger } from "../cli/log.ts";
import { type Authenticator, staticTokenAuthenticator } from "../routes/auth.ts";
import type { KubeClient } from "../kube/client.ts";
import { type RunningController, startController } from "../routes/serve.ts";

export const controllerToken = "integration-token";

export interface ControllerOnSim {
  sim: Sim;
  kc: k8s.KubeConfig;
  controller: RunningController;
  logger: Logger;
  /** POST to the controller with the bearer token. */
  post(path: string, init?: RequestInit): Promise<{ status: number; body: any }>;
}

export interface ControllerOnSimOptions extends SimOptions {
  /** Simulated time factor of the cluster (pod start, pulls); default 50. */
  speed?: number;
  tickEveryMs?: number;
  logger?: Logger;
  /** Default: the static `controllerToken`. */
  auth?: (kube: KubeClient) => Authenticator;
}

export async function withControllerOnSim(
  options: ControllerOnSimOptions,
  body: (env: ControllerOnSim) => Promise<void>,
): Promise<void> {
  const speed = options.speed ?? 50;
  const sim = await startSim({
    nodes: 4,
    ...options,
    behaviour: (store, o) =>
      startClusterBehaviour(store, {
        nodes: o.nodes,
        zones: o.zones,
        speed,
        seed: 7,
        log: () => {},
      }),
  });
  let controller: RunningController | undefined;
  try {
    sim.store.create(
      "customresourcedefinitions.apiextensions.k8s.io",
      advancedDaemonSetCrd() as never,
    );
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(sim.kubeconfigPath);
    const logger = options.logger ?? memoryLogger();
    controller = startController({
      kubeConfig: kc,
      port: 0,
      hostname: "127.0.0.1",
      auth: options.auth ?? (() => staticTokenAuthenticator(controllerToken)),
      tickEveryMs: options.tickEveryMs,
      eventDelayMs: 20,
      logger,
    });
    const url = controller.url;
    const post = async (path: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${controllerToken}`);
      const res = await fetch(`${url}${path}`, { method: "POST", ...init, headers });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    await body({ sim, kc, controller, logger, post });
  } finally {
    await controller?.stop();
    await sim.stop();
  }
}

/** Polls `probe` until it returns something truthy; fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
