/** Reads a server-sent events stream as a person's browser would: each event's data, parsed. */
export async function* sseData<T>(response: Response): AsyncGenerator<T> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end === -1) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        continue;
      }
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) =>
        l.slice(5).trimStart()
      ).join("\n");
      if (data) yield JSON.parse(data) as T;
    }
  } finally {
    await reader.cancel();
  }
}
