/**
 * The end-to-end suite on the target `EDGEROLL_E2E_TARGET` names: `deno task test:cluster`
 * runs it on the real control plane. (Not named *.test.ts: `deno task test` runs the sim half
 * through `on-sim-*.test.ts`, in parts.)
 */
import { e2eSuite } from "./suite.ts";
import { targetKindFromEnv } from "./target.ts";

e2eSuite(targetKindFromEnv());
