/**
 * A stream of JSON values one per line (a watch's events), split as text arrives: a value cut
 * between two chunks waits for the rest. A line longer than `maxLineChars` is an error, not a
 * wait without end.
 */
export class JsonLines {
  #pending = "";

  constructor(
    private readonly onValue: (value: unknown) => void,
    private readonly maxLineChars = 32 * 2 ** 20,
  ) {}

  push(text: string): void {
    this.#pending += text;
    let newline: number;
    while ((newline = this.#pending.indexOf("\n")) >= 0) {
      const line = this.#pending.slice(0, newline).trim();
      this.#pending = this.#pending.slice(newline + 1);
      if (line !== "") this.onValue(JSON.parse(line));
    }
    if (this.#pending.length > this.maxLineChars) {
      throw new Error(`a line longer than ${this.maxLineChars} characters`);
    }
  }

  /** Whether a line was cut short when the stream ended. */
  get partial(): boolean {
    return this.#pending.trim() !== "";
  }
}
