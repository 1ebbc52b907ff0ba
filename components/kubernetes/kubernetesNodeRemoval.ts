/**
 * Deletes a Kubernetes Node when the server running it leaves the program, after that server (the
 * server depends on it). One per Node name: Elastic Metal and Robot members keep their Node name
 * across reinstalls, so a replacement leaves it alone; a Hetzner Cloud Node is named per server
 * generation, so the old generation's removal deletes the old Node once the old server is gone. A
 * `pulumi.dynamic` resource: its serialized provider's `delete` uses only Node built-ins
 * (kubernetesApiClient.ts) and the connection details the program extracted from the kubeconfig.
 */
import * as pulumi from "@pulumi/pulumi";
import { type KubernetesCredentials, kubernetesApiRequest, secretCredentialsJson } from "./kubernetesApiClient";

/** DELETE /api/v1/nodes/<name>; a Node that is already gone (404) is a success. */
export async function deleteKubernetesNode(credentialsJson: string, nodeName: string): Promise<void> {
  if (!credentialsJson) {
    throw new Error(`cannot delete Kubernetes Node ${nodeName}: no usable kubeconfig was configured when the node was declared`);
  }
  const creds = JSON.parse(credentialsJson) as KubernetesCredentials;
  await kubernetesApiRequest(creds, "DELETE", `/api/v1/nodes/${encodeURIComponent(nodeName)}`, `deleting Kubernetes Node ${nodeName}`);
}

interface NodeRemovalState {
  nodeName: string;
  credentials: string;
}

/** Exported for tests, which run its serialized form as the engine would. */
export const nodeRemovalProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: NodeRemovalState) {
    return { id: inputs.nodeName, outs: inputs };
  },
  // New credentials are stored in place; only a different node name means another Node.
  async diff(_id: string, olds: NodeRemovalState, news: NodeRemovalState) {
    return {
      changes: olds.nodeName !== news.nodeName || olds.credentials !== news.credentials,
      replaces: olds.nodeName !== news.nodeName ? ["nodeName"] : [],
      deleteBeforeReplace: false,
    };
  },
  async update(_id: string, _olds: NodeRemovalState, news: NodeRemovalState) {
    return { outs: news };
  },
  // Without usable credentials (an exec-plugin kubeconfig: declaring warned, naming the reason) the
  // Node is left for you to delete: failing here would block removing the member for good.
  async delete(_id: string, props: NodeRemovalState) {
    if (!props.credentials) return;
    await deleteKubernetesNode(props.credentials, props.nodeName);
  },
};

export interface KubernetesNodeRemovalArgs {
  /** The Kubernetes Node name (the member's hostname; for Hetzner Cloud, the generation's server name). */
  readonly nodeName: string;
  /** Kubeconfig allowed to delete Nodes (token or client certificate users); a secret. */
  readonly kubeconfig: pulumi.Input<string>;
}

/** `pulumi-nodejs:dynamic/nodefleet:KubernetesNodeRemoval`: deleting it deletes the Node. */
export class KubernetesNodeRemoval extends pulumi.dynamic.Resource {
  constructor(name: string, args: KubernetesNodeRemovalArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = secretCredentialsJson(
      args.kubeconfig,
      `node ${args.nodeName}: its Node will not be deleted on removal (delete it with kubectl)`,
    );
    super(
      nodeRemovalProvider,
      name,
      { nodeName: args.nodeName, credentials },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "KubernetesNodeRemoval",
    );
  }
}

/**
 * The Node removal of one Node name, `<nodeName>-node-removal`: the member's hostname for Elastic
 * Metal and Robot (a reinstall keeps it), the generation's server name for Hetzner Cloud (a
 * replacement deletes the old Node). None without a kubeconfig (render and simulation).
 */
export function memberNodeRemoval(
  nodeName: string,
  kubeconfig: pulumi.Input<string> | undefined,
  parent: pulumi.Resource,
): KubernetesNodeRemoval | undefined {
  return kubeconfig === undefined ? undefined : new KubernetesNodeRemoval(`${nodeName}-node-removal`, { nodeName, kubeconfig }, { parent });
}
