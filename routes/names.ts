/**
 * Kubernetes names as the API server allows them (DNS-1123), as plain rules: the zod schemas of
 * `params.ts` are built from them, and the OTA routes check them without zod, whose code the
 * edge agent does not load (ADR 0019).
 */
export interface NameRule {
  pattern: RegExp;
  max: number;
  message: string;
}

/** Object names: DNS-1123 subdomains. */
export const dns1123Subdomain: NameRule = {
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  max: 253,
  message: "must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.' between labels",
};

/** Namespace names: DNS-1123 labels (no dots, at most 63 characters). */
export const dns1123Label: NameRule = {
  pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  max: 63,
  message: "must be a DNS-1123 label: lower case letters, digits and '-'",
};

/** What is wrong with `value` as a name under `rule`, or undefined. */
export function nameIssue(value: string, rule: NameRule): string | undefined {
  if (value.length > rule.max) return `must be at most ${rule.max} characters`;
  return rule.pattern.test(value) ? undefined : rule.message;
}
