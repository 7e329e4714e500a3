import { assertEquals } from "@std/assert";
import { auditedRequests } from "./peers-measure.ts";

const event = (
  user: string,
  verb: string,
  stage: string,
  at: string,
  object: { resource?: string; subresource?: string; code?: number } = {},
) =>
  JSON.stringify({
    stage,
    verb,
    user: { username: user },
    objectRef: {
      resource: object.resource ?? "pods",
      ...(object.subresource ? { subresource: object.subresource } : {}),
    },
    responseStatus: { code: object.code ?? 200 },
    requestReceivedTimestamp: at,
  });

Deno.test("the audit log counts a user's requests in the window: a watch when it starts", async () => {
  const path = await Deno.makeTempFile();
  try {
    const before = event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:00.000Z");
    await Deno.writeTextFile(path, before + "\n");
    const offset = (await Deno.stat(path)).size;
    await Deno.writeTextFile(
      path,
      [
        // received before the window opened, written after the offset: not counted
        event("edgeroll", "delete", "ResponseComplete", "2026-01-01T00:00:09.000Z"),
        event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:10.500Z"),
        event("edgeroll", "update", "ResponseComplete", "2026-01-01T00:00:11.000Z", {
          resource: "sets",
          subresource: "status",
        }),
        event("edgeroll", "update", "ResponseComplete", "2026-01-01T00:00:11.500Z", {
          resource: "sets",
          code: 409,
        }),
        event("edgeroll", "get", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        event("edgeroll", "watch", "ResponseStarted", "2026-01-01T00:00:12.000Z"),
        event("edgeroll", "watch", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        event("kwok", "patch", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        // after the window closed
        event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:30.000Z"),
        "",
      ].join("\n"),
      { append: true },
    );
    const counts = await auditedRequests(
      path,
      offset,
      ["edgeroll"],
      Date.parse("2026-01-01T00:00:10.000Z"),
      Date.parse("2026-01-01T00:00:20.000Z"),
    );
    assertEquals(counts, {
      requests: 5,
      writes: 3,
      conflicts: 1,
      byKind: {
        "create pods": 1,
        "update sets/status": 1,
        "update sets": 1,
        "get pods": 1,
        "watch pods": 1,
      },
    });
  } finally {
    await Deno.remove(path);
  }
});
