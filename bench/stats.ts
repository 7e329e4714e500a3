/** The middle value of a bench's runs (the upper one of an even count, as the tables print it). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
