import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { type BearerToken, EventSender } from "./sender.ts";

interface Post {
  headers: Headers;
  events: { type: string; subject: string; data: { n: number } }[];
}

function fakeFetch(statuses: number[]) {
  const posts: Post[] = [];
  const fn = (_url: string | URL | Request, init?: RequestInit) => {
    posts.push({ headers: new Headers(init?.headers), events: JSON.parse(String(init?.body)) });
    return Promise.resolve(new Response("{}", { status: statuses.shift() ?? 202 }));
  };
  return { fn: fn as typeof fetch, posts };
}

function sender(statuses: number[] = [], token: BearerToken = "t0k") {
  const http = fakeFetch(statuses);
  const s = new EventSender({
    target: "http://127.0.0.1:1/events",
    token,
    flushMs: 10_000,
    backoffMs: 1,
    logger: memoryLogger(),
    fetch: http.fn,
  });
  return { s, posts: http.posts };
}

const update = "dev.knative.apiserver.resource.update";

Deno.test("a burst is coalesced per object into one batch, the latest event winning", async () => {
  const { s, posts } = sender();
  try {
    for (let n = 0; n < 1000; n++) {
      s.send(`Pod/edge/p${n % 10}`, { type: update, subject: `p${n % 10}`, data: { n } });
    }
    await s.flush();
    assertEquals(posts.length, 1);
    assertEquals(posts[0].events.length, 10);
    assertEquals(posts[0].events.find((e) => e.subject === "p3")?.data.n, 993);
    assertEquals(posts[0].headers.get("content-type"), "application/cloudevents-batch+json");
    assertEquals(posts[0].headers.get("authorization"), "Bearer t0k");
    assertEquals(s.stats, { queued: 1000, sent: 10, posts: 1, failedPosts: 0, dropped: 0 });
  } finally {
    await s.stop();
  }
});

Deno.test("a failed post is retried; newer events replace the ones it held", async () => {
  const { s, posts } = sender([503]);
  try {
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 1 } });
    s.send("Pod/edge/b", { type: update, subject: "b", data: { n: 1 } });
    await s.flush(); // answered 503
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 2 } });
    await s.flush();
    assertEquals(posts.length, 2);
    assertEquals(posts[1].events.map((e) => `${e.subject}:${e.data.n}`).sort(), ["a:2", "b:1"]);
    assertEquals([s.stats.failedPosts, s.stats.sent, s.pending], [1, 2, 0]);
  } finally {
    await s.stop();
  }
});

Deno.test("a batch the controller rejects as malformed is dropped, not retried", async () => {
  const { s, posts } = sender([400]);
  try {
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 1 } });
    await s.flush();
    await s.flush();
    assertEquals([posts.length, s.stats.dropped, s.pending], [1, 1, 0]);
  } finally {
    await s.stop();
  }
});

Deno.test("a token from a provider is read before each post, so a rotated token is used", async () => {
  let current = "first";
  const { s, posts } = sender([], () => current);
  try {
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 1 } });
    await s.flush();
    current = "rotated";
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 2 } });
    await s.flush();
    assertEquals(posts.map((p) => p.headers.get("authorization")), [
      "Bearer first",
      "Bearer rotated",
    ]);
  } finally {
    await s.stop();
  }
});

Deno.test("the first event after a quiet spell is posted at once; the next waits out flushMs", async () => {
  const { s, posts } = sender(); // flushMs 10 s
  try {
    s.send("Pod/edge/a", { type: update, subject: "a", data: { n: 1 } });
    // flushMs is 10 s: the first post comes long before it, on the next turns.
    await eventually("the first post", () => posts.length === 1, { timeoutMs: 5000 });
    s.send("Pod/edge/b", { type: update, subject: "b", data: { n: 1 } });
    assertEquals([posts.length, s.pending], [1, 1], "a second post inside the window");
    assertEquals((s.nextPostInMs ?? 0) > 5000, true, `scheduled in ${s.nextPostInMs} ms`);
    await s.flush();
    assertEquals(posts.map((p) => p.events.map((e) => e.subject)), [["a"], ["b"]]);
  } finally {
    await s.stop();
  }
});

Deno.test("past maxPending objects waiting, the oldest event is dropped, counted and logged", async () => {
  const logger = memoryLogger();
  const http = fakeFetch([]);
  const s = new EventSender({
    target: "http://127.0.0.1:1/events",
    flushMs: 10_000,
    maxPending: 3,
    logger,
    fetch: http.fn,
  });
  try {
    for (let n = 0; n < 5; n++) {
      s.send(`Pod/edge/p${n}`, { type: update, subject: `p${n}`, data: { n } });
    }
    assertEquals([s.pending, s.stats.dropped], [3, 2]);
    await s.flush();
    assertEquals(http.posts[0].events.map((e) => e.subject), ["p2", "p3", "p4"]);
    assertEquals(
      logger.lines.filter((l) => l.msg === "events dropped: the controller has not taken them")
        .map((l) => l.oldest),
      ["Pod/edge/p0"],
    );
  } finally {
    await s.stop();
  }
});
