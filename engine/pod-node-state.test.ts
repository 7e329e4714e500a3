import { assertEquals } from "@std/assert";
import { normalizeImage } from "./pod-node-state.ts";

Deno.test("image references are compared as the container runtime reports them", () => {
  assertEquals(normalizeImage("nginx:1.27"), "docker.io/library/nginx:1.27");
  assertEquals(normalizeImage("nginx"), "docker.io/library/nginx:latest");
  assertEquals(normalizeImage("openkruise/guestbook:v1"), "docker.io/openkruise/guestbook:v1");
  assertEquals(normalizeImage("registry.example/agent:2"), "registry.example/agent:2");
  assertEquals(normalizeImage("localhost:5000/agent"), "localhost:5000/agent:latest");
  assertEquals(
    normalizeImage("nginx@sha256:31de7d2f"),
    "docker.io/library/nginx@sha256:31de7d2f",
  );
});
