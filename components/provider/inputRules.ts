/** Input rules the provider plugin's resource types share; each failure names the property and the rule. */
import { taintSchema } from "../fleet/fleetSpec";
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

export function stringFailures(property: string, value: unknown): CheckFailure[] {
  return typeof value === "string" && value !== "" ? [] : [{ property, reason: `${property} must be a non-empty string` }];
}

export function optionalStringFailures(property: string, value: unknown): CheckFailure[] {
  return value === undefined ? [] : stringFailures(property, value);
}

/** Node labels: an object of string values (the API server checks their syntax). */
export function labelsFailures(value: unknown): CheckFailure[] {
  const ok =
    value !== null && typeof value === "object" && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string");
  return ok ? [] : [{ property: "labels", reason: "labels must be an object of string values" }];
}

/** Node taints: a list of {key, value?, effect}, each as a pool's taint (fleet/fleetSpec.ts `taintSchema`). */
export function taintsFailures(value: unknown): CheckFailure[] {
  if (!Array.isArray(value)) return [{ property: "taints", reason: "taints must be a list" }];
  return value.flatMap((taint, index) => {
    const parsed = taintSchema.safeParse(taint);
    return parsed.success
      ? []
      : [{ property: `taints[${index}]`, reason: `taints[${index}]: ${parsed.error.issues.map((i) => i.message).join("; ")}` }];
  });
}
