/**
 * One Kubernetes bootstrap token per node: id, secret and expiration live in Pulumi state (stable
 * across runs, fresh for every new resource name), and the token Secret in kube-system lets the
 * kubelet authenticate for TLS bootstrap (k0s and kubeadm alike). Its lifecycle follows the
 * machine's (`phase`): renewed before the machine exists whenever less than the join margin would be
 * left when it is used (a create retried hours later never gets an expired token), fixed once the
 * machine runs (its user data holds it), and its Secret deleted once the Node has registered.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import * as time from "@pulumiverse/time";

export interface BootstrapTokenArgs {
  /**
   * The cluster's bootstrap flavour. Both get `usage-bootstrap-authentication`; kubeadm clusters also
   * get `usage-bootstrap-signing` and the `system:bootstrappers:kubeadm:default-node-token` group that
   * kubeadm's CSR auto-approval binds to.
   */
  clusterKind: "k0s" | "kubeadm";
  /** Lifetime of the token in minutes, counted from its creation (not from each run). At least 1. */
  ttlMinutes: number;
  /** The node this token is for; used in the description and as a keeper, so another node never reuses it. */
  nodeName: string;
  /** Secret description; default `Worker bootstrap token for <nodeName>, created by nodefleet`. */
  description?: string;
  /**
   * Where the token secret comes from: `random-password` (a RandomPassword, whose value is a secret in
   * state and never its resource id) or `random-string` (a RandomString, whose resource id in state
   * is the value itself, in clear: Pulumi never encrypts ids). `random-string` is only for a token
   * made by an earlier nodefleet that a machine still booting may need; see docs/security.md.
   * Default `random-password`.
   */
  secretSource?: BootstrapTokenSecretSource;
  /** Where the machine is in its join; default none (the token fixed at creation, its Secret kept). */
  phase?: BootstrapTokenPhase;
}

export type BootstrapTokenSecretSource = "random-password" | "random-string";

/**
 * - `join`: the machine does not exist yet. The token is renewed at the start of every window of
 *   `ttlMinutes - joinMarginMinutes` (from `now`), so the one it gets has at least `joinMarginMinutes`
 *   left (the margin covers the install and join: minutes for a cloud server, more for bare metal).
 * - `booting`: the machine runs with this token and has not registered: the token and Secret stay.
 * - `joined`: its Node has registered: the token stays (the user data holds it), the Secret goes.
 */
export type BootstrapTokenPhase =
  | { readonly phase: "join"; readonly joinMarginMinutes: number; readonly now: number }
  | { readonly phase: "booting" }
  | { readonly phase: "joined" };

/** The join margin of a cluster: its `bootstrapTokenJoinMarginMinutes`, else 20 minutes or half the TTL when that is less. */
export function bootstrapTokenJoinMargin(cluster: {
  readonly bootstrapTokenTtlMinutes: number;
  readonly bootstrapTokenJoinMarginMinutes?: number;
}): number {
  return cluster.bootstrapTokenJoinMarginMinutes ?? Math.min(20, Math.floor(cluster.bootstrapTokenTtlMinutes / 2));
}

/** The renewal window a token of this join belongs to; throws, naming the field, when the margin leaves no window. */
export function joinWindow(ttlMinutes: number, joinMarginMinutes: number, now: number): number {
  if (!Number.isInteger(joinMarginMinutes) || joinMarginMinutes < 1 || joinMarginMinutes >= ttlMinutes) {
    throw new Error(
      `bootstrapTokenJoinMarginMinutes must be a whole number from 1 to bootstrapTokenTtlMinutes - 1 (${ttlMinutes - 1}), got ${joinMarginMinutes}`,
    );
  }
  return Math.floor(now / ((ttlMinutes - joinMarginMinutes) * 60_000));
}

/** The token Secret's default description. */
export function bootstrapTokenDescription(nodeName: string): string {
  return `Worker bootstrap token for ${nodeName}, created by nodefleet`;
}

/** The token Secret's namespace and type, fixed by the bootstrap token authenticator. */
export const BOOTSTRAP_TOKEN_NAMESPACE = "kube-system";
export const BOOTSTRAP_TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token";
export const KUBEADM_NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token";

/** The Secret's string data for a token, as the bootstrap token authenticator reads it. */
export function bootstrapTokenSecretData(
  kind: BootstrapTokenArgs["clusterKind"],
  fields: { tokenId: string; tokenSecret: string; expiration: string; description: string },
): Record<string, string> {
  return {
    "token-id": fields.tokenId,
    "token-secret": fields.tokenSecret,
    expiration: fields.expiration,
    description: fields.description,
    "usage-bootstrap-authentication": "true",
    ...(kind === "kubeadm" ? { "usage-bootstrap-signing": "true", "auth-extra-groups": KUBEADM_NODE_TOKEN_GROUP } : {}),
  };
}

// Bootstrap token ids and secrets are [a-z0-9] only (k8s.io/cluster-bootstrap).
const TOKEN_CHARSET = { lower: true, upper: false, numeric: true, special: false } as const;

export class BootstrapToken extends pulumi.ComponentResource {
  /** The public token id (6 characters); the Secret is `kube-system/bootstrap-token-<id>`. */
  public readonly tokenId: pulumi.Output<string>;
  /** The full bootstrap token `<id>.<secret>`; a secret. */
  public readonly token: pulumi.Output<string>;
  /** Expiration, RFC 3339, fixed at creation. */
  public readonly expiration: pulumi.Output<string>;
  /** The token Secret in kube-system; none once the Node has registered (phase `joined`). */
  public readonly secret: k8s.core.v1.Secret | undefined;

  constructor(name: string, args: BootstrapTokenArgs, opts?: pulumi.ComponentResourceOptions) {
    // Checked before registering anything, so a bad TTL leaves no half-registered component behind.
    if (!Number.isInteger(args.ttlMinutes) || args.ttlMinutes < 1) {
      throw new Error(`${name}: ttlMinutes must be a positive whole number of minutes`);
    }
    const phase = args.phase;
    const window = phase?.phase === "join" ? joinWindow(args.ttlMinutes, phase.joinMarginMinutes, phase.now) : undefined;
    super("nodefleet:kubernetes:BootstrapToken", name, {}, opts);
    // A new window replaces id, secret and expiry before the machine uses them; a running machine's
    // token never changes (its keepers are left as the state has them).
    const keepers = { nodeName: args.nodeName, ...(window !== undefined ? { joinWindow: String(window) } : {}) };
    const frozen = phase?.phase === "booting" || phase?.phase === "joined";
    const keep = (key: string): pulumi.CustomResourceOptions => ({ parent: this, ...(frozen ? { ignoreChanges: [key] } : {}) });

    const id = new random.RandomString(`${name}-id`, { length: 6, ...TOKEN_CHARSET, keepers }, keep("keepers"));
    const secretResult =
      (args.secretSource ?? "random-password") === "random-password"
        ? new random.RandomPassword(`${name}-password`, { length: 16, ...TOKEN_CHARSET, keepers }, keep("keepers")).result
        : new random.RandomString(
            `${name}-secret`,
            { length: 16, ...TOKEN_CHARSET, keepers },
            { ...keep("keepers"), additionalSecretOutputs: ["result"] },
          ).result;
    // A time resource keeps the expiration in state: computing it from "now" would change every run.
    const expiry = new time.Offset(
      `${name}-expiry`,
      { offsetMinutes: args.ttlMinutes, ...(window !== undefined ? { triggers: keepers } : {}) },
      frozen ? { parent: this, ignoreChanges: ["triggers", "offsetMinutes"] } : { parent: this },
    );

    this.tokenId = id.result;
    // Wrapped explicitly too: additionalSecretOutputs is applied by the engine, not by the mock runtime.
    const secretValue = pulumi.secret(secretResult);
    this.token = pulumi.secret(pulumi.interpolate`${id.result}.${secretValue}`);
    this.expiration = expiry.rfc3339;

    const description = args.description ?? bootstrapTokenDescription(args.nodeName);
    this.secret =
      phase?.phase === "joined"
        ? undefined
        : new k8s.core.v1.Secret(
            `${name}-secret-object`,
            {
              metadata: {
                name: pulumi.interpolate`bootstrap-token-${id.result}`,
                namespace: BOOTSTRAP_TOKEN_NAMESPACE,
                labels: { "app.kubernetes.io/managed-by": "nodefleet" },
              },
              type: BOOTSTRAP_TOKEN_SECRET_TYPE,
              stringData: pulumi.all([id.result, secretValue, expiry.rfc3339]).apply(([tokenIdValue, tokenSecretValue, expiration]) =>
                bootstrapTokenSecretData(args.clusterKind, {
                  tokenId: tokenIdValue,
                  tokenSecret: tokenSecretValue,
                  expiration,
                  description,
                }),
              ),
            },
            { parent: this },
          );

    this.registerOutputs({
      tokenId: this.tokenId,
      token: this.token,
      expiration: this.expiration,
      ...(this.secret ? { secret: this.secret } : {}),
    });
  }
}

/** The bootstrap token of one node generation, with the cluster's kind and TTL (and, when known, its secret source and phase). */
export function nodeBootstrapToken(
  name: string,
  cluster: { readonly kind: "k0s" | "kubeadm"; readonly bootstrapTokenTtlMinutes: number },
  nodeName: string,
  parent: pulumi.Resource,
  lifecycle: Pick<BootstrapTokenArgs, "secretSource" | "phase"> = {},
): BootstrapToken {
  return new BootstrapToken(
    name,
    { clusterKind: cluster.kind, ttlMinutes: cluster.bootstrapTokenTtlMinutes, nodeName, ...lifecycle },
    { parent },
  );
}
