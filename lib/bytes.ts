/** The pieces one after another in one array (a body read in chunks, lines sent as one). */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(pieces.reduce((n, piece) => n + piece.length, 0));
  let at = 0;
  for (const piece of pieces) {
    whole.set(piece, at);
    at += piece.length;
  }
  return whole;
}

/**
 * The bytes in base64 (JSON's form of a `[]byte`). Built a slice at a time: spreading a large
 * array into one `String.fromCharCode` call overflows the stack.
 */
export function bytesToBase64(bytes: Uint8Array): string {
  const slice = 0x8000;
  let binary = "";
  for (let at = 0; at < bytes.length; at += slice) {
    binary += String.fromCharCode(...bytes.subarray(at, at + slice));
  }
  return btoa(binary);
}

/**
 * A response body's text, read only up to `limit` bytes: undefined (the rest cancelled, unread)
 * once it announces or passes more. For answers of servers a caller names.
 */
export async function boundedText(response: Response, limit: number): Promise<string | undefined> {
  const announced = Number(response.headers.get("content-length") ?? "0");
  if (announced > limit) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return new TextDecoder().decode(concatBytes(chunks));
}
