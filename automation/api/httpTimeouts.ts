/**
 * How long the HTTP server waits for a client. Without these a socket that never sends a byte, or
 * an authenticated request whose body stalls, holds a connection (and its memory) forever.
 * - headersMs: from the connection (or the previous response) to the end of the request headers;
 * - requestMs: from the start of a request to the end of its body (answered 408 RequestTimeout);
 * - keepAliveMs: how long an idle keep-alive connection stays open after a response (the Karpenter
 *   driver closes its idle connections a second sooner: driver/pkg/apiclient/connection.go);
 * - socketIdleMs: a socket silent in both directions is closed; longer than the longest create
 *   with waitSeconds (120 s), during which the service itself sends nothing.
 */
export interface HttpTimeouts {
  readonly headersMs: number;
  readonly requestMs: number;
  readonly keepAliveMs: number;
  readonly socketIdleMs: number;
}

export const DEFAULT_HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5_000, socketIdleMs: 150_000 };

/** Fastify's options for these timeouts (Node checks header and request deadlines every checkMs). */
export function fastifyTimeoutOptions(timeouts: HttpTimeouts) {
  if (timeouts.headersMs > timeouts.requestMs) throw new Error("the headers timeout cannot be longer than the request timeout");
  const checkMs = Math.max(50, Math.min(1000, Math.floor(timeouts.headersMs / 2)));
  return {
    connectionTimeout: timeouts.socketIdleMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    requestTimeout: timeouts.requestMs,
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: checkMs },
  };
}
