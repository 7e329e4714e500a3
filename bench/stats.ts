/**
 * The value at fraction `p` of a bench's figures, sorted (NaN for none): `p` 0.5 is the middle
 * one, the upper of an even count, as the tables print it.
 */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** The middle value of a bench's runs. */
export function median(values: number[]): number {
  return percentile(values, 0.5);
}

export const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
