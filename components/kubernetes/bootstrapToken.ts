/**
 * One Kubernetes bootstrap token per node: the random id and secret and the expiration live in
 * Pulumi state (stable across runs, fresh for every new resource name), and the token Secret in
 * kube-system lets the node's kubelet authenticate for TLS bootstrap (k0s and kubeadm alike).
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
  /** The token Secret in kube-system. */
  public readonly secret: k8s.core.v1.Secret;

  constructor(name: string, args: BootstrapTokenArgs, opts?: pulumi.ComponentResourceOptions) {
    // Checked before registering anything, so a bad TTL leaves no half-registered component behind.
    if (!Number.isInteger(args.ttlMinutes) || args.ttlMinutes < 1) {
      throw new Error(`${name}: ttlMinutes must be a positive whole number of minutes`);
    }
    super("nodefleet:kubernetes:BootstrapToken", name, {}, opts);
    const keepers = { nodeName: args.nodeName };

    const id = new random.RandomString(`${name}-id`, { length: 6, ...TOKEN_CHARSET, keepers }, { parent: this });
    const tokenSecret = new random.RandomString(
      `${name}-secret`,
      { length: 16, ...TOKEN_CHARSET, keepers },
      { parent: this, additionalSecretOutputs: ["result"] },
    );
    // A time resource keeps the expiration in state: computing it from "now" would change every run.
    const expiry = new time.Offset(`${name}-expiry`, { offsetMinutes: args.ttlMinutes }, { parent: this });

    this.tokenId = id.result;
    // Wrapped explicitly too: additionalSecretOutputs is applied by the engine, not by the mock runtime.
    const secretValue = pulumi.secret(tokenSecret.result);
    this.token = pulumi.secret(pulumi.interpolate`${id.result}.${secretValue}`);
    this.expiration = expiry.rfc3339;

    const description = args.description ?? `Worker bootstrap token for ${args.nodeName}, created by nodefleet`;
    this.secret = new k8s.core.v1.Secret(
      `${name}-secret-object`,
      {
        metadata: {
          name: pulumi.interpolate`bootstrap-token-${id.result}`,
          namespace: BOOTSTRAP_TOKEN_NAMESPACE,
          labels: { "app.kubernetes.io/managed-by": "nodefleet" },
        },
        type: BOOTSTRAP_TOKEN_SECRET_TYPE,
        stringData: pulumi
          .all([id.result, secretValue, expiry.rfc3339])
          .apply(([tokenIdValue, tokenSecretValue, expiration]) =>
            bootstrapTokenSecretData(args.clusterKind, { tokenId: tokenIdValue, tokenSecret: tokenSecretValue, expiration, description }),
          ),
      },
      { parent: this },
    );

    this.registerOutputs({ tokenId: this.tokenId, token: this.token, expiration: this.expiration, secret: this.secret });
  }
}

/** The bootstrap token of one node generation, with the cluster's kind and TTL. */
export function nodeBootstrapToken(
  name: string,
  cluster: { readonly kind: "k0s" | "kubeadm"; readonly bootstrapTokenTtlMinutes: number },
  nodeName: string,
  parent: pulumi.Resource,
): BootstrapToken {
  return new BootstrapToken(name, { clusterKind: cluster.kind, ttlMinutes: cluster.bootstrapTokenTtlMinutes, nodeName }, { parent });
}
