/**
 * Bearer-token authentication and cluster authorisation for the /api/v1 routes. No token or an
 * unknown token: 401. A token of a cluster this service does not serve: always 403. A valid token
 * on the path of another cluster: 403 when that cluster is served or has tokens, 404
 * ClusterNotFound when nobody knows it. A token no static entry knows that is a JWT is reviewed as
 * the driver's projected ServiceAccount token when NODEFLEET_SERVICE_ACCOUNT is set
 * (serviceAccountTokens.ts): it grants the served cluster. Runs in onRequest, before the body is
 * read, so unauthenticated clients cannot make the service parse anything.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { ApiError } from "./apiError";
import { bearerToken, hashToken, type TokenVerifier } from "./apiTokens";
import { looksLikeJwt, type ServiceAccountTokens } from "./serviceAccountTokens";

declare module "fastify" {
  interface FastifyRequest {
    /** The cluster the presented token belongs to. */
    tokenCluster?: string;
  }
}

interface PresentedToken {
  readonly token: string | undefined;
  /** hashToken(token), computed once. */
  readonly hash: Buffer | undefined;
  /** The cluster of a valid token. */
  readonly cluster: string | undefined;
}

// Rate limiting and authentication both look at the token: it is hashed and checked once per request.
const presented = new WeakMap<FastifyRequest, PresentedToken>();

function presentedToken(request: FastifyRequest, tokens: TokenVerifier): PresentedToken {
  let seen = presented.get(request);
  if (!seen) {
    const token = bearerToken(request.headers.authorization);
    const hash = token ? hashToken(token) : undefined;
    seen = { token, hash, cluster: hash ? tokens.clusterOfHash(hash) : undefined };
    presented.set(request, seen);
  }
  return seen;
}

/**
 * Rate limiting key: a valid token's hash (never the token), or the client address for a request
 * without a valid token, so that guessing tokens (each guess a new token) shares one budget per
 * address instead of getting a fresh one per guess.
 */
export function rateLimitKey(tokens: TokenVerifier, serviceAccounts?: ServiceAccountTokens): (request: FastifyRequest) => string {
  return (request) => {
    const { hash, cluster } = presentedToken(request, tokens);
    // A ServiceAccount token counts as valid once a review accepted it (cached): the first request of a new one shares the address's budget.
    const valid = hash && (cluster !== undefined || serviceAccounts?.acceptedRecently(hash));
    return valid ? `token:${hash.toString("hex", 0, 16)}` : `${UNAUTHENTICATED_KEY_PREFIX}${request.ip}`;
  };
}

/** The answer to a request without a bearer token (the front of several clusters gives it too). */
export function missingTokenError(): ApiError {
  return new ApiError("Unauthorized", "missing bearer token: send Authorization: Bearer <token>");
}

/** The key prefix of requests that will fail authentication. */
export const UNAUTHENTICATED_KEY_PREFIX = "ip:";

export const authPlugin = fp<{ tokens: TokenVerifier; servedClusters: ReadonlySet<string>; serviceAccounts?: ServiceAccountTokens }>(
  async (app: FastifyInstance, options) => {
    const knownClusters = new Set([...options.servedClusters, ...options.tokens.clusters()]);
    const { serviceAccounts } = options;
    app.addHook("onRequest", async (request) => {
      const { token, hash, cluster: staticCluster } = presentedToken(request, options.tokens);
      if (!token || !hash) throw missingTokenError();
      let cluster = staticCluster;
      if (cluster === undefined && serviceAccounts && looksLikeJwt(token)) {
        await serviceAccounts.authenticate(token, hash);
        cluster = serviceAccounts.clusterId;
      }
      if (cluster === undefined) throw new ApiError("Unauthorized", "unknown token");
      request.tokenCluster = cluster;
      const wanted = (request.params as { clusterId?: string } | undefined)?.clusterId;
      if (!options.servedClusters.has(cluster)) {
        throw new ApiError("Forbidden", "this token belongs to a cluster this service does not serve");
      }
      if (wanted !== undefined && wanted !== cluster) {
        if (!knownClusters.has(wanted)) throw new ApiError("ClusterNotFound", "this service does not serve that cluster");
        throw new ApiError("Forbidden", "this token does not grant access to that cluster");
      }
    });
  },
  { name: "nodefleet-auth" },
);
