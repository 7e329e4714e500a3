/**
 * Fidelity of the simulator as the real `kubectl` (1.32, picked by the dispatcher from
 * `/version`) sees it: discovery, client-side and server-side apply, Tables, describe,
 * the three patch types, delete with its wait, CRDs with printer columns.
 */
import { assertEquals, assertMatch, assertStringIncludes } from "@std/assert";
import { parse as parseYaml } from "yaml";
import type { Sim } from "../../sim/start.ts";
import { kubectl, withSim } from "./helpers.ts";

const DAEMONSET = `
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  labels: {app: agent}
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: registry.local/agent:1.0
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
`;

async function ok(sim: Sim, args: string[], stdin?: string): Promise<string> {
  const result = await kubectl(sim, args, stdin);
  assertEquals(result.code, 0, `kubectl ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

// deno-lint-ignore no-explicit-any
type Any = Record<string, any>;

Deno.test("kubectl: get nodes prints the server-side Table", async () => {
  await withSim({ nodes: 3 }, async (sim) => {
    const lines = (await ok(sim, ["get", "nodes"])).trim().split("\n");
    assertMatch(lines[0], /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
    assertEquals(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3)), [
      ["edge-1", "Ready", "<none>"],
      ["edge-2", "Ready", "<none>"],
      ["edge-3", "Ready", "<none>"],
    ]);
    assertMatch(lines[1], /v1\.32\.\d+$/);
    const version = await ok(sim, ["version", "-o", "json"]);
    assertEquals(JSON.parse(version).serverVersion.minor, "32");
  });
});

Deno.test("kubectl: apply, re-apply with a removed env var, get -o yaml, describe, delete", async () => {
  await withSim({}, async (sim) => {
    assertStringIncludes(
      await ok(sim, ["apply", "-f", "-"], DAEMONSET),
      "daemonset.apps/agent created",
    );
    const changed = DAEMONSET.replace("agent:1.0", "agent:2.0").replace(
      '        - {name: B, value: "2"}\n',
      "",
    );
    assertStringIncludes(
      await ok(sim, ["apply", "-f", "-"], changed),
      "daemonset.apps/agent configured",
    );
    const ds = parseYaml(await ok(sim, ["get", "daemonset", "agent", "-o", "yaml"])) as Any;
    assertEquals(ds.metadata.generation, 2);
    const container = ds.spec.template.spec.containers[0];
    assertEquals(container.image, "registry.local/agent:2.0");
    assertEquals(container.env, [{ name: "A", value: "1" }]);
    assertEquals(ds.spec.updateStrategy.type, "RollingUpdate");
    assertEquals(
      typeof ds.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"],
      "string",
    );

    const table = (await ok(sim, ["get", "ds"])).split("\n")[0];
    assertMatch(
      table,
      /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE$/,
    );
    const described = await ok(sim, ["describe", "ds", "agent"]);
    assertStringIncludes(described, "Selector:       app=agent");
    assertStringIncludes(described, "registry.local/agent:2.0");

    assertStringIncludes(
      await ok(sim, ["delete", "ds", "agent"]),
      'daemonset.apps "agent" deleted',
    );
    const after = await kubectl(sim, ["get", "ds", "agent"]);
    assertEquals(after.code, 1);
    assertStringIncludes(after.stderr, 'daemonsets.apps "agent" not found');
  });
});

Deno.test("kubectl: patch --type json, merge and strategic", async () => {
  await withSim({}, async (sim) => {
    await ok(sim, ["apply", "-f", "-"], DAEMONSET);
    await ok(sim, [
      "patch",
      "ds",
      "agent",
      "--type",
      "json",
      "-p",
      '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"registry.local/agent:3.0"}]',
    ]);
    await ok(sim, [
      "patch",
      "ds",
      "agent",
      "--type",
      "merge",
      "-p",
      '{"metadata":{"labels":{"tier":"edge"}}}',
    ]);
    await ok(sim, [
      "patch",
      "ds",
      "agent",
      "--type",
      "strategic",
      "-p",
      '{"spec":{"template":{"spec":{"containers":[{"name":"agent","env":[{"name":"C","value":"3"}]}]}}}}',
    ]);
    const ds = JSON.parse(await ok(sim, ["get", "ds", "agent", "-o", "json"]));
    assertEquals(ds.metadata.labels, { app: "agent", tier: "edge" });
    const container = ds.spec.template.spec.containers[0];
    assertEquals(container.image, "registry.local/agent:3.0");
    assertEquals(container.env.map((e: Any) => e.name), ["A", "B", "C"]);
    assertEquals(ds.metadata.generation, 3);
  });
});

Deno.test("kubectl: apply --server-side records the manager and drops removed fields", async () => {
  await withSim({}, async (sim) => {
    const config = (data: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n${data}`;
    assertStringIncludes(
      await ok(sim, ["apply", "--server-side", "-f", "-"], config('  a: "1"\n  b: "2"\n')),
      "configmap/cfg serverside-applied",
    );
    await ok(sim, ["apply", "--server-side", "-f", "-"], config('  a: "1"\n'));
    const cm = JSON.parse(
      await ok(sim, ["get", "cm", "cfg", "-o", "json", "--show-managed-fields"]),
    );
    assertEquals(cm.data, { a: "1" });
    assertEquals(cm.metadata.managedFields.map((m: Any) => [m.manager, m.operation]), [[
      "kubectl",
      "Apply",
    ]]);
    const conflict = await kubectl(
      sim,
      ["apply", "--server-side", "--field-manager", "other", "-f", "-"],
      config('  a: "9"\n'),
    );
    assertEquals(conflict.code, 1);
    assertStringIncludes(conflict.stderr, "conflict");
  });
});

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1}
              mode: {type: string, enum: [fast, slow]}
              budget: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              phase: {type: string}
`;

Deno.test("kubectl: a created CRD is served with validation, printer columns and short names", async () => {
  await withSim({}, async (sim) => {
    await ok(sim, ["apply", "-f", "-"], CRD);
    const widget = (spec: string) =>
      `apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n${spec}`;
    assertStringIncludes(
      await ok(sim, ["apply", "-f", "-"], widget("  size: 3\n  mode: fast\n  budget: 25%\n")),
      "widget.example.com/w1 created",
    );
    const lines = (await ok(sim, ["get", "wd"])).trim().split("\n");
    assertMatch(lines[0], /^NAME\s+SIZE\s+PHASE\s+AGE$/);
    assertMatch(
      lines[1],
      /^w1\s+3\s+\d+s$/,
      "an absent column value prints blank, as on a cluster",
    );
    const invalid = await kubectl(
      sim,
      ["apply", "-f", "-"],
      widget("  size: 0\n  mode: medium\n").replace("w1", "w2"),
    );
    assertEquals(invalid.code, 1);
    assertStringIncludes(invalid.stderr, "spec.size");
    assertStringIncludes(invalid.stderr, 'Unsupported value: "medium"');
    const typo = await kubectl(sim, ["apply", "-f", "-"], widget("  size: 3\n  sise: 4\n"));
    assertEquals(typo.code, 1, "kubectl's strict field validation refuses unknown fields");
    assertStringIncludes(typo.stderr, 'unknown field "spec.sise"');
    const warned = await kubectl(
      sim,
      ["apply", "--validate=warn", "-f", "-"],
      widget("  size: 3\n  sise: 4\n"),
    );
    assertEquals(warned.code, 0, warned.stderr);
    assertStringIncludes(warned.stderr, 'unknown field "spec.sise"');
    await ok(sim, ["patch", "widget", "w1", "--type", "merge", "-p", '{"spec":{"size":5}}']);
    const patched = JSON.parse(await ok(sim, ["get", "widget", "w1", "-o", "json"]));
    // The warned apply dropped mode and budget (generation 2), the patch set size (3).
    assertEquals([patched.spec.size, patched.metadata.generation], [5, 3]);
    await ok(sim, ["delete", "crd", "widgets.example.com"]);
    const gone = await kubectl(sim, ["get", "widgets"]);
    assertEquals(gone.code, 1);
  });
});

Deno.test("kubectl: rollout status follows the native DaemonSet controller to completion", async () => {
  await withSim({ nodes: 4 }, async (sim) => {
    await ok(sim, ["apply", "-f", "-"], DAEMONSET);
    const first = await ok(sim, ["rollout", "status", "daemonset/agent", "--timeout=120s"]);
    assertStringIncludes(first, 'daemon set "agent" successfully rolled out');
    await ok(sim, ["set", "image", "daemonset/agent", "agent=registry.local/agent:2.0"]);
    const second = await ok(sim, ["rollout", "status", "daemonset/agent", "--timeout=120s"]);
    assertStringIncludes(second, 'daemon set "agent" successfully rolled out');
    const pods = (await ok(sim, ["get", "pods", "-l", "app=agent", "-o", "wide", "--no-headers"]))
      .trim().split("\n");
    assertEquals(pods.length, 4);
    for (const line of pods) assertMatch(line, /\s1\/1\s+Running\s+\d+\s/);
    const images = await ok(sim, [
      "get",
      "pods",
      "-l",
      "app=agent",
      "-o",
      "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assertEquals(images.split(" "), Array(4).fill("registry.local/agent:2.0"));
  });
});

Deno.test("kubectl: create namespace/configmap/secret/serviceaccount send protobuf bodies", async () => {
  await withSim({}, async (sim) => {
    const ok = async (args: string[]) => {
      const result = await kubectl(sim, args);
      assertEquals(result.code, 0, result.stderr);
      return result.stdout;
    };
    await ok(["create", "namespace", "proto"]);
    // The serviceaccount controller's part: every namespace gets `default`.
    const accounts = sim.store.list("serviceaccounts", { namespace: "proto" }).items;
    assertEquals(accounts.map((a) => a.metadata.name), ["default"]);
    await ok(["-n", "proto", "create", "configmap", "cm", "--from-literal=colour=blue"]);
    await ok(["-n", "proto", "create", "secret", "generic", "s", "--from-literal=pin=1234"]);
    await ok(["-n", "proto", "create", "serviceaccount", "bot"]);
    const cm = sim.store.get("configmaps", "proto", "cm") as { data?: Record<string, string> };
    assertEquals(cm.data, { colour: "blue" });
    const secret = sim.store.get("secrets", "proto", "s") as { data?: Record<string, string> };
    assertEquals(atob(secret.data!.pin), "1234");
    assertEquals(sim.store.tryGet("serviceaccounts", "proto", "bot")?.metadata.name, "bot");
    const refused = await kubectl(sim, ["-n", "proto", "create", "deployment", "d", "--image=x"]);
    assertEquals(refused.code, 1);
    assertStringIncludes(refused.stderr, "not Deployment; send JSON");
  });
});
