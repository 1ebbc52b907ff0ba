/** Input rules the provider plugin's resource types share; each failure names the property and the rule. */
import type { CheckFailure } from "./resourceHandler";

// A Node name is a DNS subdomain (RFC 1123): lower-case alphanumerics, '-' and '.', at most 253.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function nodeNameFailures(value: unknown): CheckFailure[] {
  return typeof value === "string" && value.length <= 253 && DNS_SUBDOMAIN.test(value)
    ? []
    : [{ property: "nodeName", reason: "nodeName must be a Kubernetes Node name (a DNS subdomain of at most 253 characters)" }];
}

export function positiveIntegerFailures(property: string, value: unknown): CheckFailure[] {
  return Number.isInteger(value) && (value as number) >= 1 ? [] : [{ property, reason: `${property} must be a whole number, at least 1` }];
}
