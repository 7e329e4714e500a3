import { assertEquals, assertStringIncludes, assertThrows } from "@std/assert";
import { connectionFromKubeconfig } from "../kube/lean-config.ts";
import { kubeconfigYaml, type Sim, startSim } from "../sim/start.ts";
import { otaGuard, startEdgeAgent } from "./agent.ts";
import { disconnectedText } from "../controller/ota-checks.ts";
import { openOnLoopback } from "../routes/auth.ts";
import { memoryLogger } from "../lib/log.ts";
import { eventually, Kube, type Pod } from "../tests/e2e/kube.ts";
import { exerciseEdgeAgent, otaNamespace, seedOtaUpgrade } from "../tests/edge-ota.ts";
import { freePort } from "../cluster/processes.ts";

/** A state directory of its own for one agent, removed with `using`. */
async function stateDir(): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix: "edgeroll-edge-state-" });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

/**
 * An agent whose API server is a port nothing listens on: every request is refused, as on a
 * node cut off from the cloud since the agent started.
 */
function unreachableAgent(
  stateDir: string,
  options: { token?: string; logger?: ReturnType<typeof memoryLogger> } = {},
) {
  return startEdgeAgent({
    connection: {
      server: `http://127.0.0.1:${freePort()}`,
      source: "test",
      insecureSkipTlsVerify: false,
    },
    node: "edge-1",
    token: options.token,
    stateDir,
    port: 0,
    logger: options.logger ?? memoryLogger(),
  });
}

Deno.test({
  name:
    "edge agent on sim: lists its node's pods from its cache, refuses another node's, upgrades its own; no token on loopback",
  async fn() {
    const sim = await startSim({ nodes: 2, speed: 20 });
    await using state = await stateDir();
    const agent = await startEdgeAgent({
      connection: connectionFromKubeconfig(sim.kubeconfigPath),
      node: "edge-1",
      stateDir: state.path,
      port: 0,
      logger: memoryLogger(),
    });
    try {
      const kube = new Kube(sim.kubeconfigPath);
      const byNode = await seedOtaUpgrade(kube, ["edge-1", "edge-2"]);
      await exerciseEdgeAgent(kube, { url: agent.url, node: "edge-1" }, byNode);
    } finally {
      await agent.stop();
      await sim.stop();
    }
  },
});

Deno.test("edge agent: a token is needed beyond loopback, or on loopback when asked; given, it is checked", async () => {
  assertEquals(otaGuard({ hostname: "127.0.0.1" }), openOnLoopback);
  assertEquals(otaGuard({ hostname: "::1" }), openOnLoopback);
  assertThrows(() => otaGuard({ hostname: "0.0.0.0" }), Error, "beyond loopback, needs a token");
  assertThrows(() => otaGuard({ hostname: "10.0.0.7" }), Error, "needs a token");
  assertThrows(
    () => otaGuard({ hostname: "127.0.0.1", requireToken: true }),
    Error,
    "--require-token",
  );
  await using state = await stateDir();
  const token = crypto.randomUUID();
  const agent = await unreachableAgent(state.path, { token });
  try {
    const without = await fetch(`${agent.url}/pods`);
    assertEquals([without.status, await without.text()], [401, "a bearer token is required"]);
    const wrong = await fetch(`${agent.url}/pods`, { headers: { authorization: "Bearer nope" } });
    assertEquals(wrong.status, 401);
    await wrong.body?.cancel();
    // The right token passes the guard; the pods are not known (no API server): 503.
    const right = await fetch(`${agent.url}/pods`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assertEquals(right.status, 503);
    await right.body?.cancel();
  } finally {
    await agent.stop();
  }
});

Deno.test("edge agent: an API server never reached answers 503 in YurtHub's words, never an empty list", async () => {
  await using state = await stateDir();
  const agent = await unreachableAgent(state.path);
  try {
    const pods = await fetch(`${agent.url}/pods`);
    assertEquals(pods.status, 503);
    assertStringIncludes(
      await pods.text(),
      "Get pod list failed, the pods of node edge-1 are not known yet",
    );
    for (const query of ["", "?whenConnected=true"]) {
      const res = await fetch(
        `${agent.url}/openyurt.io/v1/namespaces/default/pods/ota-agent-x/upgrade${query}`,
        { method: "POST" },
      );
      assertEquals([res.status, await res.text()], [503, disconnectedText], query);
    }
    const bad = await fetch(`${agent.url}/openyurt.io/v1/namespaces/Default/pods/x/upgrade`, {
      method: "POST",
    });
    assertEquals(bad.status, 400);
    assertStringIncludes(await bad.text(), "ns: must be a DNS-1123");
  } finally {
    await agent.stop();
  }
});

/** Cuts or heals `node`'s link through the simulator's admin API. */
async function nodeLink(sim: Sim, node: string, verb: "disconnect" | "reconnect") {
  const res = await fetch(`${sim.url}/sim/v1/nodes/${node}/${verb}`, {
    method: "POST",
    headers: { authorization: `Bearer ${sim.token}` },
  });
  assertEquals(res.status, 200, await res.text());
}

Deno.test({
  name:
    "edge agent cut off: GET /pods answers from its cache, after a restart too; a whenConnected upgrade is carried out once when the link returns",
  async fn() {
    const sim = await startSim({ nodes: 2, speed: 20 });
    await using state = await stateDir();
    const connection = connectionFromKubeconfig(await sim.nodeKubeconfig("edge-1"));
    const start = () =>
      startEdgeAgent({
        connection,
        node: "edge-1",
        stateDir: state.path,
        port: 0,
        logger: memoryLogger(),
      });
    let agent = await start();
    try {
      const kube = new Kube(sim.kubeconfigPath);
      const ours = (await seedOtaUpgrade(kube, ["edge-1", "edge-2"])).get("edge-1")!;
      const listed = async () => {
        const res = await fetch(`${agent.url}/pods`);
        assertEquals(res.status, 200);
        const body = await res.json();
        return {
          age: Number(res.headers.get("age")),
          uids: body.items.map((p: Pod) => p.metadata.uid),
          requests: body.upgradeRequests as { uid: string; state: string }[],
        };
      };
      // The mark is in the cache before the link goes.
      await eventually("the marked pod in the agent's cache", async () => {
        const res = await fetch(`${agent.url}/pods`);
        const items: Pod[] = (await res.json()).items;
        return items.some((p) =>
          p.metadata.uid === ours.metadata.uid &&
          p.status?.conditions?.some((c) => c.type === "PodNeedUpgrade" && c.status === "True")
        );
      });
      await nodeLink(sim, "edge-1", "disconnect");
      await eventually("the agent to see the link gone", async () => {
        const health = await (await fetch(`${agent.url}/healthz`)).json();
        return health.connected === false;
      });
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const cutOff = await listed();
      assertEquals(cutOff.uids, [ours.metadata.uid]);
      assertEquals(cutOff.age >= 1, true, `Age ${cutOff.age}`);

      const upgradeUrl = () =>
        `${agent.url}/openyurt.io/v1/namespaces/${otaNamespace}/pods/${ours.metadata.name}/upgrade`;
      const now = await fetch(upgradeUrl(), { method: "POST" });
      assertEquals([now.status, await now.text()], [503, disconnectedText]);
      const queued = await fetch(`${upgradeUrl()}?whenConnected=true`, { method: "POST" });
      assertEquals(queued.status, 202);
      assertStringIncludes(
        await queued.text(),
        "it starts when the node is connected to cloud again",
      );
      assertEquals((await listed()).requests.map((r) => [r.uid, r.state]), [[
        ours.metadata.uid,
        "pending",
      ]]);

      // A restart while still cut off: the cache and the request come back from the state dir.
      await agent.stop();
      agent = await start();
      const restarted = await listed();
      assertEquals(restarted.uids, [ours.metadata.uid]);
      assertEquals(restarted.requests.map((r) => r.state), ["pending"]);

      await nodeLink(sim, "edge-1", "reconnect");
      const replacement = await eventually("a v2 pod on edge-1", async () => {
        const pod = (await kube.pods(otaNamespace, "app=ota-agent"))
          .find((p) => p.spec.nodeName === "edge-1" && !p.metadata.deletionTimestamp);
        return pod && pod.metadata.uid !== ours.metadata.uid ? pod : undefined;
      });
      assertEquals(replacement.spec.containers[0].image.endsWith(":v2"), true);
      const settled = await eventually("the request settled", async () => {
        const { requests } = await listed();
        return requests[0]?.state !== "pending" ? requests : undefined;
      });
      assertEquals(settled.map((r) => [r.uid, r.state]), [[ours.metadata.uid, "started"]]);
      // Once: the replacement is left alone by a second reconnection.
      await nodeLink(sim, "edge-1", "disconnect");
      await nodeLink(sim, "edge-1", "reconnect");
      await eventually(
        "the agent connected again",
        async () => (await (await fetch(`${agent.url}/healthz`)).json()).connected === true,
      );
      const after = (await kube.pods(otaNamespace, "app=ota-agent")).filter((p) =>
        p.spec.nodeName === "edge-1"
      );
      assertEquals(after.map((p) => p.metadata.uid), [replacement.metadata.uid]);
    } finally {
      await agent.stop();
      await sim.stop();
    }
  },
});

Deno.test("edge agent: a state directory of another node's is refused at start, with its path", async () => {
  await using state = await stateDir();
  await Deno.writeTextFile(
    `${state.path}/pods.json`,
    JSON.stringify({ node: "edge-9", syncedAt: 0, resourceVersion: "", pods: [] }),
  );
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  try {
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(`http://127.0.0.1:${freePort()}`, "t"));
    const started = startEdgeAgent({
      connection: connectionFromKubeconfig(kubeconfig),
      node: "edge-1",
      stateDir: state.path,
      port: 0,
      logger: memoryLogger(),
    });
    const err = await started.then(() => undefined, (e: Error) => e);
    assertStringIncludes(
      String(err?.message),
      `${state.path}/pods.json holds the pods of node edge-9`,
    );
  } finally {
    await Deno.remove(kubeconfig);
  }
});

Deno.test("edge agent: a request target that is no URL is a logged 400", async () => {
  const logger = memoryLogger();
  await using state = await stateDir();
  const agent = await unreachableAgent(state.path, { logger });
  try {
    const { hostname, port } = new URL(agent.url);
    const conn = await Deno.connect({ hostname, port: Number(port) });
    try {
      await conn.write(
        new TextEncoder().encode("GET // HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      );
      const chunks: Uint8Array[] = [];
      for await (const chunk of conn.readable) chunks.push(chunk);
      const answer = new TextDecoder().decode(
        new Uint8Array(chunks.flatMap((c) => [...c])),
      );
      assertStringIncludes(answer.split("\r\n")[0], "400");
      assertStringIncludes(answer, '"reason":"BadRequest"');
    } finally {
      try {
        conn.close();
      } catch { /* closed by the server after answering */ }
    }
    assertEquals(logger.lines.some((l) => l.msg === "request refused" && l.target === "//"), true);
  } finally {
    await agent.stop();
  }
});

Deno.test("main.ts edge: --node is required; beyond loopback a token is; a blank token is refused; exit 2 with the reason", async () => {
  const main = new URL("../main.ts", import.meta.url).pathname;
  const { EDGEROLL_TOKEN: _, ...withoutToken } = Deno.env.toObject();
  const run = async (args: string[], env: Record<string, string> = {}) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", main, "edge", ...args],
      env: { ...withoutToken, ...env },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  };
  const noNode = await run([]);
  assertEquals(noNode.code, 2);
  assertStringIncludes(noNode.stderr, "--node is required");
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  try {
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(`http://127.0.0.1:${freePort()}`, "t"));
    const open = await run(["--node=edge-1", "--host=0.0.0.0", `--kubeconfig=${kubeconfig}`]);
    assertEquals(open.code, 2);
    assertStringIncludes(open.stderr, "beyond loopback, needs a token");
    const notAKubeconfig = await run(["--node=edge-1", "--kubeconfig=/dev/null"]);
    assertEquals(notAKubeconfig.code, 2);
    assertStringIncludes(notAKubeconfig.stderr, "/dev/null: not a kubeconfig");
    const blank = await run([`--node=edge-1`, `--kubeconfig=${kubeconfig}`], {
      EDGEROLL_TOKEN: " ",
    });
    assertEquals(blank.code, 2);
    assertStringIncludes(blank.stderr, "EDGEROLL_TOKEN is set but empty");
  } finally {
    await Deno.remove(kubeconfig);
  }
});
