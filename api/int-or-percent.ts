/**
 * Kubernetes `IntOrString` values such as `maxUnavailable: 2` or `"10%"`: checking and scaling,
 * as `k8s.io/apimachinery/pkg/util/intstr` does (a percent is `\d+%`, nothing else).
 */
import type { IntOrString } from "./kube-objects.ts";

const percentPattern = /^(\d+)%$/;

/** Why `value` is not a well-formed int or percent, or null when it is. */
export function intOrPercentProblem(
  value: IntOrString,
  { allowZero }: { allowZero: boolean },
): string | null {
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return `must be an integer, got ${value}`;
    if (value < 0 || (!allowZero && value === 0)) {
      return allowZero ? "must be non-negative" : "must be positive";
    }
    return null;
  }
  const match = percentPattern.exec(value);
  if (!match) return `must be an integer or a percentage like "10%", got "${value}"`;
  const percent = Number(match[1]);
  if (!allowZero && percent === 0) return "must be positive";
  if (percent > 100) return `must not be greater than 100%, got "${value}"`;
  return null;
}

/** True when the value is 0 or "0%". Assumes the value passed `intOrPercentProblem`. */
export function isZero(value: IntOrString): boolean {
  return typeof value === "number" ? value === 0 : Number(value.slice(0, -1)) === 0;
}

/**
 * Resolves `value` against `total`: an int as is, a percent of `total` rounded up or down.
 * Assumes the value passed `intOrPercentProblem`.
 */
export function scaleIntOrPercent(value: IntOrString, total: number, roundUp: boolean): number {
  if (typeof value === "number") return value;
  const exact = (Number(value.slice(0, -1)) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}
