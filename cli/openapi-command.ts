/**
 * `edgeroll openapi`: writes the OpenAPI documents of the controller and the edge agent, written
 * from the routes' zod schemas (routes/controller-api.ts, routes/ota-docs.ts; ADR 0046). The edge
 * agent serves its committed copy (it loads no zod); `openapi-command.test.ts` holds both copies
 * to a fresh generation, so a route change without `deno task openapi` fails the tests.
 */
import { controllerOpenApi } from "../routes/controller-api.ts";
import { edgeAgentOpenApi } from "../routes/ota-docs.ts";
import { type Command, stringOption } from "../lib/command.ts";
import { writeGenerated } from "./generated-files.ts";

export const openApiFiles = (): [name: string, text: string][] => [
  // The controller's every route, `/convert` (served with --kruise) too.
  ["controller.json", JSON.stringify(controllerOpenApi({ kruise: true }), null, 2) + "\n"],
  ["edge-agent.json", JSON.stringify(edgeAgentOpenApi(), null, 2) + "\n"],
];

export const openApiCommand: Command = {
  name: "openapi",
  summary: "Write the OpenAPI documents of the controller and the edge agent.",
  usage: "[--out DIR]",
  options: { out: { type: "string" } },
  help: {
    out:
      "directory to write controller.json and edge-agent.json into (default: print the controller's)",
  },
  async run(args) {
    const out = stringOption(args, "out");
    if (out === undefined) {
      console.log(openApiFiles()[0][1].trimEnd());
      return 0;
    }
    await writeGenerated(out, openApiFiles(), "OpenAPI document");
    return 0;
  },
};
