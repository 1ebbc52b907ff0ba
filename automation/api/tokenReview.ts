/**
 * One TokenReview (authentication.k8s.io/v1) against the served cluster's API server, with the
 * kubeconfig the service already holds for it (clusterNodeList.ts `serviceKubeconfig`). The API
 * server checks the token's signature, expiry, bound object and audience; this module only asks and
 * reads the answer. Reference: https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-review-v1/
 * Errors never carry the token: the API server's own messages are scrubbed of it before use.
 */
import { kubeconfigCredentials, kubernetesApiRequest } from "../../components/kubernetes/kubernetesApiClient";
import { errorMessage } from "../../components/shared/errorMessage";

/**
 * How long a review may take. The driver gives up on an API request after 10 s
 * (driver/pkg/apiclient DefaultRequestTimeout); a review must end well before that, so a hanging API
 * server shows the driver a 401 naming the TokenReview rule instead of a timeout of its own.
 */
export const TOKEN_REVIEW_TIMEOUT_MS = 5_000;

/** What a TokenReview answered: who the token is, and for which audiences, or why it is not accepted. */
export interface TokenReviewStatus {
  readonly authenticated: boolean;
  /** `system:serviceaccount:<namespace>:<name>` for a ServiceAccount token. */
  readonly username?: string;
  /** The audiences the token is valid for among those asked (absent when the server did not say). */
  readonly audiences?: readonly string[];
  /** The API server's reason for an unauthenticated token, scrubbed of the token. */
  readonly error?: string;
}

/** Reviews one token for the audiences asked; rejects with TokenReviewError when the review itself fails. */
export type ReviewToken = (token: string, audiences: readonly string[]) => Promise<TokenReviewStatus>;

/** The review could not be made: no kubeconfig, an unreachable API server, or a refused TokenReview (RBAC). */
export class TokenReviewError extends Error {
  override readonly name = "TokenReviewError";
}

/** `text` with every occurrence of the token replaced, so an echoing server cannot leak it through us. */
function withoutToken(text: string, token: string): string {
  return token ? text.split(token).join("<token>") : text;
}

/** The status of a TokenReview answer, or undefined when the answer has none (not a TokenReview). */
function statusOf(answer: unknown, token: string): TokenReviewStatus | undefined {
  const status = (answer as { status?: Record<string, unknown> } | undefined)?.status;
  if (!status || typeof status !== "object") return undefined;
  const user = status.user as { username?: unknown } | undefined;
  return {
    authenticated: status.authenticated === true,
    ...(typeof user?.username === "string" ? { username: user.username } : {}),
    ...(Array.isArray(status.audiences) ? { audiences: status.audiences.filter((a): a is string => typeof a === "string") } : {}),
    ...(typeof status.error === "string" && status.error ? { error: withoutToken(status.error, token) } : {}),
  };
}

/**
 * A ReviewToken over the kubeconfig `kubeconfig()` returns at review time (the stack file may change);
 * undefined from it means the service has no kubeconfig for the cluster, which is a failed review.
 */
export function kubeconfigTokenReview(kubeconfig: () => string | undefined, clusterId: string): ReviewToken {
  return async (token, audiences) => {
    let answer: unknown;
    try {
      const text = kubeconfig();
      if (text === undefined) throw new Error("the service has no kubeconfig for it (nodefleet:cluster.kubeconfig)");
      answer = await kubernetesApiRequest(
        kubeconfigCredentials(text),
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        `TokenReview on cluster ${clusterId}'s API server`,
        {
          contentType: "application/json",
          value: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: [...audiences] } },
        },
        TOKEN_REVIEW_TIMEOUT_MS,
      );
    } catch (error) {
      throw new TokenReviewError(withoutToken(errorMessage(error), token));
    }
    const status = statusOf(answer, token);
    if (!status) throw new TokenReviewError(`TokenReview on cluster ${clusterId}'s API server answered without a status`);
    return status;
  };
}
