/** The end-to-end suite on the simulator, as part of `deno task test`. */
import { e2eSuite } from "./suite.ts";

e2eSuite("sim");
