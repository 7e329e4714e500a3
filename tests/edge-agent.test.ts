import { assertEquals, assertStringIncludes } from "@std/assert";
import { kubeConfigForServer } from "../kube/config.ts";
import { startSim } from "../sim/start.ts";
import { startEdgeAgent } from "../edge/agent.ts";
import { staticTokenAuthenticator } from "../routes/auth.ts";
import { memoryLogger } from "../lib/log.ts";
import { Kube } from "./e2e/kube.ts";
import { exerciseEdgeAgent, seedOtaUpgrade } from "./edge-ota.ts";
import { freePort } from "../cluster/processes.ts";

Deno.test({
  name: "edge agent on sim: lists its node's pods, refuses another node's, upgrades its own",
  async fn() {
    const sim = await startSim({ nodes: 2, speed: 20 });
    const token = crypto.randomUUID();
    const agent = await startEdgeAgent({
      kubeConfig: kubeConfigForServer(sim.url, sim.token),
      node: "edge-1",
      auth: staticTokenAuthenticator(token),
      port: 0,
      logger: memoryLogger(),
    });
    try {
      const kube = new Kube(sim.kubeconfigPath);
      const byNode = await seedOtaUpgrade(kube, ["edge-1", "edge-2"]);
      await exerciseEdgeAgent(kube, { url: agent.url, token, node: "edge-1" }, byNode);
    } finally {
      await agent.stop();
      await sim.stop();
    }
  },
});

Deno.test("edge agent: an API server that cannot be reached answers 503, not a hang", async () => {
  const token = crypto.randomUUID();
  const agent = await startEdgeAgent({
    // A port nothing listens on: every request is refused, as on a node cut off from the cloud.
    kubeConfig: kubeConfigForServer(`http://127.0.0.1:${freePort()}`),
    node: "edge-1",
    auth: staticTokenAuthenticator(token),
    port: 0,
    logger: memoryLogger(),
  });
  try {
    for (
      const [path, method] of [
        ["/pods", "GET"],
        ["/openyurt.io/v1/namespaces/default/pods/ota-agent-x/upgrade", "POST"],
      ]
    ) {
      const res = await fetch(`${agent.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      });
      assertEquals(res.status, 503, path);
      assertEquals((await res.json()).error.reason, "KubernetesUnavailable");
    }
  } finally {
    await agent.stop();
  }
});

Deno.test("edge agent: a request target that is no URL is a logged 400 in the JSON error shape", async () => {
  const logger = memoryLogger();
  const agent = await startEdgeAgent({
    kubeConfig: kubeConfigForServer(`http://127.0.0.1:${freePort()}`),
    node: "edge-1",
    auth: staticTokenAuthenticator(crypto.randomUUID()),
    port: 0,
    logger,
  });
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

Deno.test("main.ts edge: --node and a token are required, exit 2 with the reason", async () => {
  const main = new URL("../main.ts", import.meta.url).pathname;
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", main, "edge", ...args],
      env: { EDGEROLL_TOKEN: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  };
  const noNode = await run([]);
  assertEquals(noNode.code, 2);
  assertStringIncludes(noNode.stderr, "--node is required");
  const noToken = await run(["--node=edge-1"]);
  assertEquals(noToken.code, 2);
  assertStringIncludes(noToken.stderr, "--token-file (or EDGEROLL_TOKEN)");
});
