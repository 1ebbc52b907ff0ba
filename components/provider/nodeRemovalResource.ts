/**
 * `nodefleet:kubernetes:NodeRemoval`: deleting it deletes a Kubernetes Node, after the server that
 * runs it (the server depends on it). The member-sized successor of the dynamic
 * KubernetesNodeRemoval (kubernetes/kubernetesNodeRemoval.ts): its state holds only the Node name,
 * and the credentials come from the provider's configuration, once per pool.
 */
import * as pulumi from "@pulumi/pulumi";
import { deleteKubernetesNode } from "../kubernetes/kubernetesNodeRemoval";
import { type ResourceHandler, changedKeys, keepNewInputs } from "./resourceHandler";
import { nodeNameFailures } from "./inputRules";

export const NODE_REMOVAL_TYPE = "nodefleet:kubernetes:NodeRemoval";

/** Runs in the provider plugin. */
export const nodeRemovalHandler: ResourceHandler = {
  check(news) {
    return { inputs: { nodeName: news.nodeName }, failures: nodeNameFailures(news.nodeName) };
  },
  // Another Node name is another Node: a new removal (the old one deletes the old Node).
  diff(olds, news) {
    const changed = changedKeys(olds, news, ["nodeName"]);
    return { changed, replaces: changed };
  },
  async create(inputs) {
    return { id: String(inputs.nodeName), outs: inputs };
  },
  update: keepNewInputs,
  // Without usable credentials the Node is left for you to delete (declaring warned): failing here
  // would block removing the member for good.
  async delete(_id, props, access) {
    if (!access.credentialsJson) return;
    await deleteKubernetesNode(access.credentialsJson, String(props.nodeName));
  },
};

export interface NodeRemovalArgs {
  /** The Kubernetes Node name (for Hetzner Cloud, the generation's server name). */
  readonly nodeName: string;
}

export class NodeRemoval extends pulumi.CustomResource {
  declare readonly nodeName: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider. */
  constructor(name: string, args: NodeRemovalArgs, opts: pulumi.CustomResourceOptions) {
    super(NODE_REMOVAL_TYPE, name, { nodeName: args.nodeName }, opts);
  }
}
