/**
 * Request URLs as they are logged: a client that puts a token (or anything else) in the query
 * string must not find it in clear in the service's log. Only the values of the API's own query
 * parameters, which carry no secrets, are kept; every other value is replaced, and so is a
 * parameter without a value that is not one of the API's (`?<token>`: the name is the secret).
 */
import type { FastifyRequest } from "fastify";

/** Query parameters of the API whose values are safe to log. */
const LOGGED_QUERY_VALUES: ReadonlySet<string> = new Set(["waitSeconds", "pool"]);
export const REDACTED = "[redacted]";

export function redactedUrl(url: string): string {
  const question = url.indexOf("?");
  if (question < 0) return url;
  const query = url
    .slice(question + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq < 0 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, " "));
      } catch {
        // a malformed name is not one of ours
      }
      if (LOGGED_QUERY_VALUES.has(decoded) || pair === "") return pair;
      return eq < 0 ? REDACTED : `${name}=${REDACTED}`;
    })
    .join("&");
  return `${url.slice(0, question)}?${query}`;
}

/** Fastify's request serializer (same fields) with the URL redacted. */
export function loggedRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactedUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
