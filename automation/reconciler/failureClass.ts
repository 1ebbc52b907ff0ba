/**
 * Whether a failed step of an engine run may go through when tried again. Transient: the cluster's
 * API or Hetzner's did not answer, timed out, answered 5xx or 429 (an outage, a restart, a rate
 * limit). Permanent: anything else, such as a refusal (401, 403, invalid input) or a sold-out type.
 * Pure: it reads the error text the engine reports, which is all a step carries.
 */

/** Which API a failure waited on: the cluster's (kube-apiserver) or the cloud's (Hetzner). */
export type FailureSource = "controlPlane" | "cloudApi";

export type FailureClass =
  { readonly transient: true; readonly source: FailureSource | undefined; readonly signature: string } | { readonly transient: false };

/**
 * What an answer that is no answer looks like, from Go's net/http and client-go (the providers),
 * Node's fetch (nodefleet's own clients), the Kubernetes API's status messages and Hetzner's error
 * codes (hcloud-go writes `message (code, correlation id)`). Matched case-insensitively anywhere.
 */
const TRANSIENT: ReadonlyArray<readonly [string, RegExp]> = [
  ["connection refused", /connection refused|ECONNREFUSED/i],
  [
    "connection reset",
    /connection reset|ECONNRESET|broken pipe|EPIPE|socket hang up|client connection lost|server sent GOAWAY|use of closed network connection/i,
  ],
  ["unexpected end of answer", /unexpected EOF|: EOF\b/i],
  ["TLS handshake timeout", /TLS handshake timeout/i],
  [
    "timeout",
    /i\/o timeout|context deadline exceeded|Client\.Timeout exceeded|ETIMEDOUT|timed out|timeout awaiting|no answer within|\(timeout[,)]/i,
  ],
  [
    "unreachable",
    /no route to host|EHOSTUNREACH|ENETUNREACH|network is unreachable|cluster is unreachable|temporary failure in name resolution|EAI_AGAIN/i,
  ],
  ["overloaded (429)", /too many requests|rate.?limit|\b429\b/i],
  [
    "server error (5xx)",
    /the server is currently unable to handle the request|the server was unable to return a response|internal error occurred|internal server error|service unavailable|bad gateway|gateway timeout|etcdserver: (request timed out|leader changed)|\((service_error|server_error|unavailable|maintenance)[,)]|(status(?: code)?|HTTP|API)[ :]*5\d\d\b/i,
  ],
  // Hetzner: another action holds the resource, or it changed during the request; both say "retry".
  ["resource busy", /\((locked|conflict)[,)]|the object has been modified/i],
];

/**
 * Refusals that no retry changes. Checked first: a message carrying one of these fails the claim even
 * when it mentions a timeout too (one step's message may list several errors).
 */
const PERMANENT =
  /forbidden|unauthori[sz]ed|\b40[0134]\b|\b422\b|invalid|uniqueness_error|already exists|not found|resource_unavailable|sold out|out of stock|insufficient capacity|resource_limit_exceeded|placement_error/i;

/** Which API a step's failure waited on, from the resource type first, else from the message. */
export function failureSource(resourceType: string | undefined, message: string): FailureSource | undefined {
  const type = resourceType ?? "";
  if (/^kubernetes:|:kubernetes:/.test(type)) return "controlPlane";
  if (/^hcloud:|:hcloud:/.test(type)) return "cloudApi";
  if (/hetzner|hcloud/i.test(message)) return "cloudApi";
  if (/kubernetes|kube-apiserver|cluster is unreachable|etcdserver/i.test(message)) return "controlPlane";
  return undefined;
}

export function classifyFailure(message: string, resourceType?: string): FailureClass {
  if (PERMANENT.test(message)) return { transient: false };
  const match = TRANSIENT.find(([, pattern]) => pattern.test(message));
  if (!match) return { transient: false };
  return { transient: true, source: failureSource(resourceType, message), signature: match[0] };
}

/** An HTTP answer worth asking again: rate limited, or the server's own failure. */
export function transientStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/** In words, for logs and /readyz: `the cluster's API (kube-apiserver)`. */
export function sourceName(source: FailureSource | undefined): string {
  return source === "controlPlane"
    ? "the cluster's API (kube-apiserver)"
    : source === "cloudApi"
      ? "the Hetzner Cloud API"
      : "an API the run depends on";
}

/**
 * Why a create failed for a while rather than for this request alone: retrying it at once meets the
 * same refusal, so the API stops admitting what would fail again (offeringAvailability.ts) instead
 * of running the engine once per relaunch. Hetzner's documented error codes
 * (https://docs.hetzner.cloud/#errors): `resource_unavailable` (the type is sold out where asked),
 * `placement_error` (no host could take the server), `resource_limit_exceeded` (a quota of the
 * project: servers, cores, or a network's or placement group's size).
 * - soldOut: this server type in this location (other types may still be had there);
 * - quota: the project's quota; a smaller type may still fit it, so only this offering;
 * - image: the pool's image cannot be used (missing, deprecated, wrong architecture): any type of
 *   the pool would fail the same way, so the whole pool;
 * - poolLimit: the pool's network or placement group is full: the whole pool.
 */
export type LaunchBackoffKind = "soldOut" | "quota" | "image" | "poolLimit";

export interface LaunchBackoff {
  readonly kind: LaunchBackoffKind;
  /** What is unavailable: the one offering (server type × location) or every offering of the pool. */
  readonly scope: "offering" | "pool";
  /** A short reason, for the offering's `unavailableReason` and logs. */
  readonly summary: string;
}

const LIMIT_CODE = /resource_limit_exceeded|placement_error/i;
const POOL_FULL = /\b(network|placement group)\b[^;]*?\b(holds|is full|limit|maximum)/i;
const QUOTA = /resource_limit_exceeded|\b(server|core|cpu)s? limit (exceeded|reached)/i;
const IMAGE =
  /\bimage\b[^;]*?(not found|unavailable|deprecated|invalid|cannot be used|is not usable|architecture)|(unknown|invalid|deprecated) image/i;
const SOLD_OUT = /resource_unavailable|placement_error|error during placement|sold out|out of stock|insufficient capacity/i;

/** The backoff a failed create's error calls for, or undefined when the failure is this request's own. */
export function launchBackoffOf(message: string): LaunchBackoff | undefined {
  // What the next attempt may not meet (an outage) is retried, never backed off.
  if (classifyFailure(message).transient) return undefined;
  if (LIMIT_CODE.test(message) && POOL_FULL.test(message))
    return { kind: "poolLimit", scope: "pool", summary: "the pool's network or placement group is full" };
  if (QUOTA.test(message))
    return { kind: "quota", scope: "offering", summary: "the Hetzner project's quota is exhausted (resource_limit_exceeded)" };
  if (IMAGE.test(message)) return { kind: "image", scope: "pool", summary: "the pool's image cannot be used" };
  if (SOLD_OUT.test(message)) return { kind: "soldOut", scope: "offering", summary: "sold out in this location" };
  return undefined;
}
