import { assertEquals, assertThrows } from "@std/assert";
import { parseDuration } from "./duration.ts";
import { UsageError } from "./command.ts";

Deno.test("parseDuration reads ms, s, m, h and bare seconds", () => {
  assertEquals(["500ms", "30s", "5m", "1h", "2", "1.5s"].map((t) => parseDuration(t, "tick")), [
    500,
    30_000,
    300_000,
    3_600_000,
    2000,
    1500,
  ]);
});

Deno.test("parseDuration names the flag of a bad value", () => {
  assertThrows(() => parseDuration("soon", "tick"), UsageError, "--tick");
  assertThrows(() => parseDuration("0s", "tick"), UsageError, "more than zero");
  assertThrows(() => parseDuration("-3s", "tick"), UsageError);
});
