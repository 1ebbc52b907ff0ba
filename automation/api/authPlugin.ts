/**
 * Bearer-token authentication and cluster authorisation for the /api/v1 routes. No token or an
 * unknown token: 401. A token of another cluster, or of a cluster this service does not serve:
 * 403. Runs in onRequest, before the body is read, so unauthenticated clients cannot make the
 * service parse anything.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError } from "./apiError";
import { bearerToken, hashToken, type TokenVerifier } from "./apiTokens";

declare module "fastify" {
  interface FastifyRequest {
    /** The cluster the presented token belongs to. */
    tokenCluster?: string;
  }
}

/** Rate limiting key: the token's hash (never the token), or the client address without one. */
export function rateLimitKey(request: FastifyRequest): string {
  const token = bearerToken(request.headers.authorization);
  return token ? `token:${hashToken(token).toString("hex").slice(0, 32)}` : `ip:${request.ip}`;
}

export const authPlugin = fp<{ tokens: TokenVerifier; servedClusters: ReadonlySet<string> }>(
  async (app: FastifyInstance, options) => {
    app.addHook("onRequest", async (request) => {
      const token = bearerToken(request.headers.authorization);
      if (!token) throw new ApiError("Unauthorized", "missing bearer token: send Authorization: Bearer <token>");
      const cluster = options.tokens.clusterOf(token);
      if (cluster === undefined) throw new ApiError("Unauthorized", "unknown token");
      request.tokenCluster = cluster;
      const wanted = (request.params as { clusterId?: string } | undefined)?.clusterId;
      if (!options.servedClusters.has(cluster)) {
        throw new ApiError("Forbidden", "this token belongs to a cluster this service does not serve");
      }
      if (wanted !== undefined && wanted !== cluster) {
        throw new ApiError("Forbidden", "this token does not grant access to that cluster");
      }
    });
  },
  { name: "nodefleet-auth" },
);
