/**
 * Analysis checks (ADR 0055) in words, as `kubectl edgeroll status` and the dashboard's set page
 * show them: one text for both.
 */
import type { CheckStatus } from "../api/analysis.ts";

/** `step 1 errors in zone-a`, `errors in zone-b`, `errors` (a check of the whole set). */
export const checkLabel = (c: CheckStatus) =>
  `${c.step !== undefined ? `step ${c.step} ` : ""}${c.check}${
    c.domain !== undefined ? ` in ${c.domain}` : ""
  }`;

/** `2 passed, 1 failed, 0 inconclusive; last 0.4 at … (fails), next at …`. */
export function checkCounts(c: CheckStatus): string {
  const last = c.measurements.at(-1);
  return `${c.passed} passed, ${c.failed} failed, ${c.inconclusive} inconclusive` +
    (last
      ? `; last ${last.value ?? "no value"} at ${last.at}${
        last.message ? ` (${last.message})` : ""
      }`
      : "") +
    (c.nextAt ? `, next at ${c.nextAt}` : "");
}
