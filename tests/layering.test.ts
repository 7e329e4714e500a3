/**
 * The rooms of `docs/architecture.md`, read from its table, the one map: which rooms and npm
 * packages each room's code may import, read from the import statements of every source file,
 * types included. Test files (`*.test.ts`, `*.e2e.ts`, `testdata/`) are judged with `tests/`. The
 * map must also be the code's: every room and package a row names is imported by that room.
 */
import { assertEquals } from "@std/assert";

const root = new URL("../", import.meta.url);

/** A row of the map: the rooms (`api`, …) and npm packages its code may import; `*`: any. */
interface Room {
  rooms: string[] | "*";
  packages: string[] | "*";
}

/** The table under `## Rooms`: path | holds | may import (ours) | npm packages. */
async function readMap(): Promise<Map<string, Room>> {
  const page = await Deno.readTextFile(new URL("docs/architecture.md", root));
  const section = page.slice(page.indexOf("\n## Rooms\n"));
  const rows = section.split("\n").filter((line) => line.startsWith("| `"));
  const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
  const map = new Map<string, Room>();
  for (const row of rows) {
    const [paths, _holds, ours, npm] = row.split("|").slice(1, -1).map((cell) => cell.trim());
    const room: Room = {
      rooms: ours === "any" ? "*" : ticked(ours).map((path) => path.replace(/\/$/, "")),
      packages: npm === "any" ? "*" : ticked(npm),
    };
    for (const path of ticked(paths)) map.set(path.replace(/\/$/, ""), room);
  }
  if (map.size < 10) {
    throw new Error(`docs/architecture.md's room table not found (${map.size} rows)`);
  }
  map.set(".", { rooms: "*", packages: "*" }); // main.ts
  return map;
}

async function sourceFiles(dir: URL, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory) {
      if (["node_modules", ".git", ".cache", "dist", "bin"].includes(entry.name)) continue;
      files.push(...await sourceFiles(new URL(`${entry.name}/`, dir), `${path}/`));
    } else if (entry.name.endsWith(".ts") || entry.name.endsWith(".tsx")) {
      files.push(path);
    }
  }
  return files;
}

const roomOf = (path: string) => path.includes("/") ? path.slice(0, path.indexOf("/")) : ".";
const isTest = (path: string) =>
  /\.(test|e2e)\.tsx?$/.test(path) || path.includes("/testdata/") || roomOf(path) === "tests";

/** Every module specifier of `import … from "x"`, `export … from "x"`, `import "x"`, `import("x")`. */
function specifiers(source: string): string[] {
  const patterns = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[1]));
}

/** `node:fs` → `node:`; `hono/timeout` → `hono`; `@hono/zod-validator/x` → `@hono/zod-validator`. */
function packageOf(specifier: string): string {
  if (specifier.startsWith("node:")) return "node:";
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** What each source file outside the tests imports: rooms of ours and npm packages. */
async function importsByFile(): Promise<{ file: string; rooms: string[]; packages: string[] }[]> {
  const found = [];
  for (const file of await sourceFiles(root)) {
    if (isTest(file) || roomOf(file) === "bench") continue;
    const source = await Deno.readTextFile(new URL(file, root));
    const rooms: string[] = [];
    const packages: string[] = [];
    for (const spec of specifiers(source)) {
      if (spec.startsWith(".")) {
        const target = new URL(spec, new URL(file, root)).pathname.slice(root.pathname.length);
        rooms.push(roomOf(target));
      } else {
        packages.push(packageOf(spec));
      }
    }
    found.push({ file, rooms, packages });
  }
  return found;
}

Deno.test("every room imports only the rooms and npm packages its row of the map names", async () => {
  const map = await readMap();
  const violations = new Set<string>();
  for (const { file, rooms, packages } of await importsByFile()) {
    const room = roomOf(file);
    const allowed = map.get(room);
    if (!allowed) throw new Error(`${file}: room ${room} is not on docs/architecture.md's map`);
    for (const target of rooms) {
      if (target === room || allowed.rooms === "*" || allowed.rooms.includes(target)) continue;
      violations.add(`${file} -> ${target}/`);
    }
    for (const name of packages) {
      if (allowed.packages === "*" || allowed.packages.includes(name)) continue;
      violations.add(`${file} -> npm ${name}`);
    }
  }
  assertEquals([...violations].sort(), [], "imports the map forbids");
});

Deno.test("the map is the code's: every room and package a row names, that room imports", async () => {
  const map = await readMap();
  const used = new Map<string, Set<string>>();
  for (const { file, rooms, packages } of await importsByFile()) {
    const room = roomOf(file);
    const seen = used.get(room) ?? new Set();
    for (const target of rooms) if (target !== room) seen.add(`${target}/`);
    for (const name of packages) seen.add(name);
    used.set(room, seen);
  }
  const unused: string[] = [];
  for (const [room, { rooms, packages }] of map) {
    const named = [
      ...(rooms === "*" ? [] : rooms.map((r) => `${r}/`)),
      ...(packages === "*" ? [] : packages),
    ];
    for (const name of named) {
      if (!used.get(room)?.has(name)) unused.push(`${room}/ names ${name}`);
    }
  }
  assertEquals(unused, [], "rows of the map that the code does not bear out");
});

Deno.test("engine/ and sim/ never import the controller's logic", async () => {
  // The two rules of CONTRIBUTING.md's rooms, held apart from the map so that widening it cannot
  // undo them: a pure planner, an independent simulator.
  for (const file of await sourceFiles(root)) {
    const room = roomOf(file);
    if (room !== "engine" && room !== "sim") continue;
    const source = await Deno.readTextFile(new URL(file, root));
    for (const spec of specifiers(source).filter((spec) => spec.startsWith("."))) {
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
