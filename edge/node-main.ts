/**
 * The edge agent's entry in its Node single executable (`deno task edge:build`): the `edge`
 * command alone, with Node's arguments. No top-level await: the bundle is CommonJS.
 */
import process from "node:process";
import { runCommand } from "../lib/command.ts";
import { edgeCommand } from "./command.ts";

runCommand(edgeCommand, process.argv.slice(2)).then((code) => process.exit(code));
