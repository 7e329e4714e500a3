import { assertEquals, assertThrows } from "@std/assert";
import { type Command, intOption, parseCommandArgs, UsageError } from "./command.ts";
import { allCommands, main } from "../main.ts";

const probe: Command = {
  name: "probe",
  summary: "a command for tests",
  usage: "[--nodes N]",
  options: { nodes: { type: "string" }, verbose: { type: "boolean" } },
  help: { nodes: "how many" },
  run: () => Promise.resolve(0),
};

Deno.test("a leading -- from `deno task x -- …` is ignored", () => {
  const args = parseCommandArgs(probe, ["--", "--nodes", "5", "extra"]);
  assertEquals(args.values.nodes, "5");
  assertEquals(args.positionals, ["extra"]);
});

Deno.test("an unknown flag is a UsageError naming the flag", () => {
  const err = assertThrows(() => parseCommandArgs(probe, ["--nodez", "5"]), UsageError);
  assertEquals(err.message.includes("--nodez"), true);
});

Deno.test("intOption rejects non-numbers and out-of-range values", () => {
  const parse = (v: string) => parseCommandArgs(probe, ["--nodes", v]);
  assertEquals(intOption(parse("12"), "nodes", 3), 12);
  assertEquals(intOption(parseCommandArgs(probe, []), "nodes", 3), 3);
  assertThrows(() => intOption(parse("1.5"), "nodes", 3), UsageError);
  assertThrows(() => intOption(parse("abc"), "nodes", 3), UsageError);
  assertThrows(() => intOption(parse("0"), "nodes", 3, { min: 1 }), UsageError);
});

Deno.test("an unknown command exits non-zero", async () => {
  const errors: unknown[] = [];
  const original = console.error;
  console.error = (...a: unknown[]) => errors.push(a);
  try {
    assertEquals(await main(["no-such-command"]), 2);
  } finally {
    console.error = original;
  }
  assertEquals(String(errors[0]).includes('unknown command "no-such-command"'), true);
});

Deno.test("every command the overview lists runs by its name (each is loaded when it runs)", async () => {
  const printed: string[] = [];
  const original = console.log;
  console.log = (...a: unknown[]) => printed.push(a.join(" "));
  const codes: Record<string, number> = {};
  try {
    for (const command of await allCommands()) {
      codes[command.name] = await main([command.name, "--help"]);
    }
  } finally {
    console.log = original;
  }
  assertEquals(Object.keys(codes).length >= 17, true);
  assertEquals(Object.entries(codes).filter(([, code]) => code !== 0), []);
  assertEquals(
    printed.every((text, i) => text.startsWith(`usage: edgeroll ${Object.keys(codes)[i]}`)),
    true,
  );
});
