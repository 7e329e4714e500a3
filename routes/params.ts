/** What the routes' zod validators share: Kubernetes names, and one way to reject bad input. */
import { z } from "zod";
import { badRequest } from "./errors.ts";
import { dns1123Label, dns1123Subdomain, type NameRule } from "./names.ts";

const named = (rule: NameRule) => z.string().max(rule.max).regex(rule.pattern, rule.message);

/** Namespace and object names as Kubernetes allows them (DNS-1123). */
export const dnsName = named(dns1123Subdomain);

/** Namespace names: DNS-1123 labels (no dots, at most 63 characters). */
export const namespaceName = named(dns1123Label);

/** Rejects with our 400 (zod issues included) instead of the validator's own answer. */
export const rejectInvalid = (
  result: { success: true } | { success: false; error: z.core.$ZodError; target?: string },
) => {
  if (!result.success) throw badRequest(`invalid ${result.target ?? "input"}`, result.error.issues);
};
