/**
 * The rooms of `docs/architecture.md` (DESIGN's map): which room's code may import which. Read
 * from the import statements of every source file, types included; test files and test
 * doubles are judged with `tests/`.
 */
import { assertEquals } from "@std/assert";

const root = new URL("../", import.meta.url);

/** Room → the rooms its code may import (besides itself). `*`: any. */
const mayImport: Record<string, string[] | "*"> = {
  lib: [],
  api: ["lib"],
  engine: ["api"],
  kube: ["api", "lib"],
  controller: ["api", "engine", "kube", "lib"],
  routes: ["api", "controller", "lib"],
  relay: ["api", "kube", "lib"],
  edge: ["api", "kube", "controller", "routes", "lib"],
  sim: ["api", "lib"],
  cluster: ["lib"],
  cli: "*",
  ".": "*", // main.ts
};

async function sourceFiles(dir: URL, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) {
      if (["node_modules", ".git", "dist", "bin"].includes(entry.name)) continue;
      files.push(...await sourceFiles(new URL(`${entry.name}/`, dir), `${path}/`));
    } else if (entry.name.endsWith(".ts") || entry.name.endsWith(".tsx")) {
      files.push(path);
    }
  }
  return files;
}

const roomOf = (path: string) => path.includes("/") ? path.slice(0, path.indexOf("/")) : ".";
const isTest = (path: string) => /\.test\.tsx?$/.test(path) || roomOf(path) === "tests";

/** `from "../kube/api.ts"`, `import "./x.ts"`, `import("../y.ts")`, types included. */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    found.push(m[1]);
  }
  return found;
}

Deno.test("every room imports only what the map allows", async () => {
  const violations = new Set<string>();
  for (const file of await sourceFiles(root)) {
    const room = roomOf(file);
    if (isTest(file) || room === "bench") continue;
    const allowed = mayImport[room];
    if (allowed === undefined) throw new Error(`${file}: room ${room} is not on the map`);
    if (allowed === "*") continue;
    const source = await Deno.readTextFile(new URL(file, root));
    for (const spec of relativeImports(source)) {
      const target = new URL(spec, new URL(file, root)).pathname.slice(root.pathname.length);
      const targetRoom = roomOf(target);
      if (targetRoom === room || allowed.includes(targetRoom)) continue;
      violations.add(`${file} -> ${targetRoom}`);
    }
  }
  assertEquals([...violations].sort(), [], "imports the map forbids");
});

Deno.test("engine/ and sim/ never import the controller's logic", async () => {
  // DESIGN's two rules, held apart from the map so that widening it cannot undo them: a pure
  // planner, an independent simulator.
  for (const file of await sourceFiles(root)) {
    const room = roomOf(file);
    if (room !== "engine" && room !== "sim") continue;
    const source = await Deno.readTextFile(new URL(file, root));
    for (const spec of relativeImports(source)) {
      const target = new URL(spec, new URL(file, root)).pathname.slice(root.pathname.length);
      const forbidden = room === "engine"
        ? !["engine", "api"].includes(roomOf(target))
        : ["engine", "kube", "controller", "routes", "relay", "edge"].includes(roomOf(target));
      assertEquals(forbidden, false, `${file} imports ${target}`);
    }
  }
});

Deno.test("the edge agent never loads @kubernetes/client-node: its module graph, types included", async () => {
  // client-node's generated models were most of the agent's memory (ADR 0019); kube/lean-client.ts
  // makes its calls. Read from `deno info`, which follows type imports too.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL("edge/node-main.ts", root).pathname],
    stdout: "piped",
  }).output();
  assertEquals(out.code, 0);
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  const specifiers = graph.modules.map((m) => m.specifier);
  assertEquals(specifiers.some((s) => s.endsWith("/edge/agent.ts")), true, "the graph was read");
  assertEquals(specifiers.filter((s) => s.includes("@kubernetes/client-node")), []);
});
