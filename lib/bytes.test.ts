import { assertEquals } from "@std/assert";
import { bytesToBase64, concatBytes } from "./bytes.ts";

Deno.test("bytesToBase64 reads as atob gives back, past the size one call could spread", () => {
  const bytes = Uint8Array.from({ length: 200_003 }, (_, i) => (i * 31 + 7) & 0xff);
  const back = Uint8Array.from(atob(bytesToBase64(bytes)), (c) => c.charCodeAt(0));
  assertEquals(back, bytes);
  assertEquals(bytesToBase64(new Uint8Array([0x6b, 0x38, 0x73])), "azhz");
  assertEquals(bytesToBase64(new Uint8Array()), "");
});

Deno.test("concatBytes joins the pieces in order", () => {
  const whole = concatBytes([new Uint8Array([1, 2]), new Uint8Array(), new Uint8Array([3])]);
  assertEquals(whole, new Uint8Array([1, 2, 3]));
});
