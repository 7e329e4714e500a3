/** The end-to-end suite's `fleet` part on a sim of its own, within `deno task test` (suite.ts). */
import { e2eSuite } from "./suite.ts";

e2eSuite("sim", ["fleet"]);
