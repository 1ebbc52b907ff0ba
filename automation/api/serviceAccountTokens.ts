/**
 * Projected ServiceAccount tokens (docs/security.md, "Projected ServiceAccount tokens"): the driver
 * presents the token kubelet projects into its pod with audience `nodefleet`; the service asks the
 * served cluster's API server whether it is valid for that audience (TokenReview) and accepts it
 * only for the one ServiceAccount configured (NODEFLEET_SERVICE_ACCOUNT, `<namespace>/<name>`: the
 * service serves one cluster, so the setting is the service's). Positive reviews are cached briefly,
 * keyed by the token's sha256 (never the token), in a bounded map; a refusal is never cached, so a
 * fixed RBAC or a new token is accepted at once. Every refusal is a 401 or 403 naming the rule.
 */
import { ApiError } from "./apiError";
import { TokenReviewError, type ReviewToken } from "./tokenReview";
import { errorMessage } from "../../components/shared/errorMessage";

/** The audience the driver's projected token is requested for, and the only one accepted. */
export const NODEFLEET_AUDIENCE = "nodefleet";

/** The ServiceAccount whose tokens are accepted. */
export interface ServiceAccountRef {
  readonly namespace: string;
  readonly name: string;
}

// DNS-1123 subdomain (ServiceAccount names) and label (namespaces), as Kubernetes validates them.
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Parses `<namespace>/<name>`; the error names the variable and the rule. */
export function parseServiceAccount(value: string, variable = "NODEFLEET_SERVICE_ACCOUNT"): ServiceAccountRef {
  const [namespace = "", name = "", ...rest] = value.trim().split("/");
  if (rest.length > 0 || !NAMESPACE.test(namespace) || !NAME.test(name)) {
    throw new Error(
      `${variable} must be <namespace>/<name> of the driver's ServiceAccount (DNS names, e.g. karpenter/nodefleet-karpenter); got ${JSON.stringify(value)}`,
    );
  }
  return { namespace, name };
}

/** A JWT has three base64url parts; only such tokens are sent for review (a static token never leaves the service). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/**
 * How one presentation of a token ended (nodefleet_api_token_reviews_total): accepted after a review,
 * accepted from the cache, refused by the API server (invalid, expired, unknown), refused for its
 * audience, refused as another identity (403), or not reviewable (no kubeconfig, unreachable or
 * silent API server, RBAC).
 */
export type TokenReviewResult = "accepted" | "cached" | "refused_token" | "refused_audience" | "refused_account" | "review_failed";

export interface ServiceAccountTokensArgs {
  /** The cluster the service serves: an accepted token grants it. */
  readonly clusterId: string;
  /** The only ServiceAccount accepted. */
  readonly serviceAccount: ServiceAccountRef;
  /** Asks the cluster's API server (tokenReview.ts kubeconfigTokenReview). */
  readonly review: ReviewToken;
  /** How long a positive review is trusted without asking again (default 60 s; kubelet refreshes tokens at 80 % of their life, hours). */
  readonly cacheTtlMs?: number;
  /** At most this many reviewed tokens are remembered; the oldest goes first (default 1024). */
  readonly cacheMax?: number;
  readonly now?: () => number;
  /** Told how each presentation ended (the service's metrics). */
  readonly observe?: (result: TokenReviewResult) => void;
}

export class ServiceAccountTokens {
  private readonly username: string;
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly now: () => number;
  /** sha256 (hex) of accepted tokens → when the acceptance expires; insertion order is age order. */
  private readonly accepted = new Map<string, number>();
  /** Reviews under way, so a burst presenting one new token asks the API server once. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly args: ServiceAccountTokensArgs) {
    this.username = `system:serviceaccount:${args.serviceAccount.namespace}:${args.serviceAccount.name}`;
    this.ttlMs = args.cacheTtlMs ?? 60_000;
    this.max = args.cacheMax ?? 1024;
    this.now = args.now ?? Date.now;
  }

  get clusterId(): string {
    return this.args.clusterId;
  }

  /** The configured ServiceAccount as `<namespace>/<name>`, for messages. */
  get accepts(): string {
    return `${this.args.serviceAccount.namespace}/${this.args.serviceAccount.name}`;
  }

  /** How many accepted tokens are remembered (for tests of the bound). */
  get cached(): number {
    return this.accepted.size;
  }

  /** True when the token of this hash was accepted and the acceptance has not expired (no review). */
  acceptedRecently(hash: Buffer): boolean {
    const key = hash.toString("hex");
    const expires = this.accepted.get(key);
    if (expires === undefined) return false;
    if (expires > this.now()) return true;
    this.accepted.delete(key);
    return false;
  }

  /**
   * Accepts the token (its hash given, hashToken) for the served cluster, or throws the ApiError
   * saying which rule it breaks: 401 for a token the API server does not accept (invalid, expired,
   * wrong audience) or cannot review, 403 for a valid token of another identity.
   */
  async authenticate(token: string, hash: Buffer): Promise<void> {
    if (this.acceptedRecently(hash)) return this.args.observe?.("cached");
    const key = hash.toString("hex");
    let review = this.inFlight.get(key);
    if (!review) {
      review = this.review(token, key).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, review);
    }
    await review;
  }

  private async review(token: string, key: string): Promise<void> {
    let status;
    try {
      status = await this.args.review(token, [NODEFLEET_AUDIENCE]);
    } catch (error) {
      const reason = error instanceof TokenReviewError ? error.message : errorMessage(error);
      this.args.observe?.("review_failed");
      throw new ApiError(
        "Unauthorized",
        `the ServiceAccount token could not be reviewed by cluster ${this.args.clusterId}'s API server (rule: tokens are accepted only after a TokenReview succeeds): ${reason}`,
      );
    }
    if (!status.authenticated) {
      // The API server's own audience check fails a token of another audience as unauthenticated.
      this.args.observe?.(/audience/i.test(status.error ?? "") ? "refused_audience" : "refused_token");
      throw new ApiError(
        "Unauthorized",
        `cluster ${this.args.clusterId}'s API server does not accept this token for audience "${NODEFLEET_AUDIENCE}" (rule: a valid, unexpired ServiceAccount token with audience "${NODEFLEET_AUDIENCE}")${status.error ? `: ${status.error}` : ""}`,
      );
    }
    // An API server that ignores spec.audiences answers none: the token is then not known to be ours.
    if (!status.audiences?.includes(NODEFLEET_AUDIENCE)) {
      this.args.observe?.("refused_audience");
      throw new ApiError(
        "Unauthorized",
        `the token is not valid for audience "${NODEFLEET_AUDIENCE}" (rule: request the projected token with audience "${NODEFLEET_AUDIENCE}"; the review answered ${JSON.stringify(status.audiences ?? [])})`,
      );
    }
    if (status.username !== this.username) {
      this.args.observe?.("refused_account");
      throw new ApiError(
        "Forbidden",
        `the token belongs to ${status.username ?? "an unnamed user"}, not to ServiceAccount ${this.accepts} (rule: NODEFLEET_SERVICE_ACCOUNT names the only ServiceAccount accepted)`,
      );
    }
    this.remember(key);
    this.args.observe?.("accepted");
  }

  private remember(key: string): void {
    this.accepted.delete(key);
    this.accepted.set(key, this.now() + this.ttlMs);
    while (this.accepted.size > this.max) {
      const oldest = this.accepted.keys().next().value as string;
      this.accepted.delete(oldest);
    }
  }
}
