/** What the routes' zod validators share: Kubernetes names, and one way to reject bad input. */
import { z } from "zod";
import { badRequest } from "./errors.ts";

/** Namespace and object names as Kubernetes allows them (DNS-1123). */
export const dnsName = z.string().max(253).regex(
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
  "must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.' between labels",
);

/** Namespace names: DNS-1123 labels (no dots, at most 63 characters). */
export const namespaceName = z.string().max(63).regex(
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  "must be a DNS-1123 label: lower case letters, digits and '-'",
);

/** Rejects with our 400 (zod issues included) instead of the validator's own answer. */
export const rejectInvalid = (
  result: { success: true } | { success: false; error: z.core.$ZodError; target?: string },
) => {
  if (!result.success) throw badRequest(`invalid ${result.target ?? "input"}`, result.error.issues);
};
