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
