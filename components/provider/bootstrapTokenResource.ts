/**
 * `nodefleet:kubernetes:NodeBootstrapToken`: one node generation's bootstrap token as one resource:
 * id and secret drawn from the OS's random source, the expiration fixed at creation, and the token
 * Secret in kube-system that the bootstrap token authenticator reads (created and deleted through
 * the Kubernetes API with the provider's credentials). It replaces the BootstrapToken component's
 * five resources (kubernetes/bootstrapToken.ts: two random values, an offset, a Secret) with one,
 * keeping its lifecycle: a new join window replaces the token before the machine exists, a running
 * machine's token never changes (the pool ignores the window then), and `secretObject: false` (the
 * Node has registered) deletes the Secret while the token stays in state.
 */
import { randomInt } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import {
  BOOTSTRAP_TOKEN_NAMESPACE,
  BOOTSTRAP_TOKEN_SECRET_TYPE,
  type BootstrapTokenArgs,
  bootstrapTokenDescription,
  bootstrapTokenSecretData,
} from "../kubernetes/bootstrapToken";
import { type KubernetesCredentials, kubernetesApiRequest } from "../kubernetes/kubernetesApiClient";
import { type CheckFailure, type ClusterAccess, type ResourceHandler, changedKeys } from "./resourceHandler";
import { nodeNameFailures, positiveIntegerFailures } from "./inputRules";

export const NODE_BOOTSTRAP_TOKEN_TYPE = "nodefleet:kubernetes:NodeBootstrapToken";

/** Inputs whose change makes a new token (id, secret and expiration). */
export const NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES = ["nodeName", "clusterKind", "ttlMinutes", "description", "joinWindow"] as const;

// Bootstrap token ids and secrets are [a-z0-9] only (k8s.io/cluster-bootstrap), 6 and 16 long.
const TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
function randomTokenPart(length: number): string {
  return Array.from({ length }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join("");
}

/** RFC 3339 in UTC without fractional seconds, as the authenticator and kubeadm write it. */
function expirationAfter(minutes: number, now: number): string {
  return new Date(now + minutes * 60_000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function credentialsOf(access: ClusterAccess, nodeName: string): KubernetesCredentials {
  if (!access.credentialsJson) {
    throw new Error(
      `cannot create the bootstrap token of ${nodeName}: nodefleet:cluster.kubeconfig must have a token or client certificate user (exec plugins and auth providers are not supported)`,
    );
  }
  return JSON.parse(access.credentialsJson) as KubernetesCredentials;
}

interface TokenFields {
  readonly tokenId: string;
  readonly token: string;
  readonly expiration: string;
}

const secretPath = (tokenId: string) =>
  `/api/v1/namespaces/${BOOTSTRAP_TOKEN_NAMESPACE}/secrets/bootstrap-token-${encodeURIComponent(tokenId)}`;

/** Creates the token Secret; an existing one (a retried update) is left as it is. False when the id is taken by another token. */
async function createTokenSecret(creds: KubernetesCredentials, inputs: Record<string, unknown>, fields: TokenFields): Promise<boolean> {
  const [, tokenSecret] = fields.token.split(".");
  try {
    await kubernetesApiRequest(
      creds,
      "POST",
      `/api/v1/namespaces/${BOOTSTRAP_TOKEN_NAMESPACE}/secrets`,
      `creating the bootstrap token Secret of ${String(inputs.nodeName)}`,
      {
        contentType: "application/json",
        value: {
          apiVersion: "v1",
          kind: "Secret",
          metadata: {
            name: `bootstrap-token-${fields.tokenId}`,
            namespace: BOOTSTRAP_TOKEN_NAMESPACE,
            labels: { "app.kubernetes.io/managed-by": "nodefleet" },
          },
          type: BOOTSTRAP_TOKEN_SECRET_TYPE,
          stringData: bootstrapTokenSecretData(inputs.clusterKind as BootstrapTokenArgs["clusterKind"], {
            tokenId: fields.tokenId,
            tokenSecret: tokenSecret ?? "",
            expiration: fields.expiration,
            description: String(inputs.description),
          }),
        },
      },
    );
    return true;
  } catch (error) {
    if ((error as { status?: number }).status === 409) return false;
    throw error;
  }
}

/** Runs in the provider plugin. */
export const nodeBootstrapTokenHandler: ResourceHandler = {
  secretOutputs: ["token"],
  check(news) {
    const failures: CheckFailure[] = [...nodeNameFailures(news.nodeName), ...positiveIntegerFailures("ttlMinutes", news.ttlMinutes)];
    if (news.clusterKind !== "k0s" && news.clusterKind !== "kubeadm")
      failures.push({ property: "clusterKind", reason: "clusterKind must be k0s or kubeadm" });
    if (typeof news.description !== "string") failures.push({ property: "description", reason: "description must be a string" });
    if (news.joinWindow !== undefined && typeof news.joinWindow !== "string")
      failures.push({ property: "joinWindow", reason: "joinWindow must be a string when given" });
    if (typeof news.secretObject !== "boolean") failures.push({ property: "secretObject", reason: "secretObject must be true or false" });
    const inputs = Object.fromEntries(
      ["nodeName", "clusterKind", "ttlMinutes", "description", "joinWindow", "secretObject"]
        .filter((k) => news[k] !== undefined)
        .map((k) => [k, news[k]]),
    );
    return { inputs, failures };
  },
  diff(olds, news) {
    return {
      changed: changedKeys(olds, news, [...NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES, "secretObject"]),
      replaces: changedKeys(olds, news, NODE_BOOTSTRAP_TOKEN_REPLACE_ON_CHANGES),
    };
  },
  async create(inputs, access) {
    const creds = credentialsOf(access, String(inputs.nodeName));
    const now = Date.now();
    // A taken id (one in 36^6) draws again; the Secret is what makes the token usable.
    for (let attempt = 0; attempt < 5; attempt++) {
      const tokenId = randomTokenPart(6);
      const fields = { tokenId, token: `${tokenId}.${randomTokenPart(16)}`, expiration: expirationAfter(Number(inputs.ttlMinutes), now) };
      if (inputs.secretObject === false || (await createTokenSecret(creds, inputs, fields))) {
        return { id: `bootstrap-token-${tokenId}`, outs: { ...inputs, ...fields } };
      }
    }
    throw new Error(`cannot create the bootstrap token of ${String(inputs.nodeName)}: five random token ids were all taken`);
  },
  async update(_id, olds, news, access) {
    const fields = { tokenId: String(olds.tokenId), token: String(olds.token), expiration: String(olds.expiration) };
    if (news.secretObject !== olds.secretObject) {
      const creds = credentialsOf(access, String(news.nodeName));
      if (news.secretObject === true) await createTokenSecret(creds, news, fields);
      else
        await kubernetesApiRequest(
          creds,
          "DELETE",
          secretPath(fields.tokenId),
          `deleting the bootstrap token Secret of ${String(news.nodeName)}`,
        );
    }
    return { ...news, ...fields };
  },
  // Without credentials the Secret stays until it expires (the token cleaner deletes expired tokens).
  async delete(_id, props, access) {
    if (!access.credentialsJson || props.secretObject === false) return;
    const creds = JSON.parse(access.credentialsJson) as KubernetesCredentials;
    await kubernetesApiRequest(
      creds,
      "DELETE",
      secretPath(String(props.tokenId)),
      `deleting the bootstrap token Secret of ${String(props.nodeName)}`,
    );
  },
};

export interface NodeBootstrapTokenArgs {
  readonly clusterKind: BootstrapTokenArgs["clusterKind"];
  /** Lifetime in minutes from creation. */
  readonly ttlMinutes: number;
  /** The node the token is for (description and identity: another node never reuses it). */
  readonly nodeName: string;
  /** The Secret's description. */
  readonly description: string;
  /** The renewal window of a token for a machine still to create (see bootstrapToken.ts `joinWindow`); absent once it runs. */
  readonly joinWindow?: string;
  /** Whether the token Secret exists: false once the Node has registered. */
  readonly secretObject: boolean;
}

/** A node's token inputs: its cluster's kind and TTL, its name and default description, and `extra` (join window, Secret presence). */
export function nodeBootstrapTokenArgs(
  cluster: { readonly kind: BootstrapTokenArgs["clusterKind"]; readonly bootstrapTokenTtlMinutes: number },
  nodeName: string,
  extra: Pick<NodeBootstrapTokenArgs, "joinWindow" | "secretObject">,
): NodeBootstrapTokenArgs {
  const { kind, bootstrapTokenTtlMinutes } = cluster;
  return { clusterKind: kind, ttlMinutes: bootstrapTokenTtlMinutes, nodeName, description: bootstrapTokenDescription(nodeName), ...extra };
}

export class NodeBootstrapToken extends pulumi.CustomResource {
  /** The public token id (6 characters); the Secret is `kube-system/bootstrap-token-<id>`. */
  declare readonly tokenId: pulumi.Output<string>;
  /** `<id>.<secret>`; a secret. */
  declare readonly token: pulumi.Output<string>;
  /** RFC 3339, fixed at creation. */
  declare readonly expiration: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider. */
  constructor(name: string, args: NodeBootstrapTokenArgs, opts: pulumi.CustomResourceOptions) {
    super(
      NODE_BOOTSTRAP_TOKEN_TYPE,
      name,
      { ...args, tokenId: undefined, token: undefined, expiration: undefined },
      { ...opts, additionalSecretOutputs: ["token"] },
    );
  }
}
