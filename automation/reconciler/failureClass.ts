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
