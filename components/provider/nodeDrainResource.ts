/**
 * `nodefleet:kubernetes:NodeDrain`: deleting it drains a Kubernetes Node (cordon, evictions within
 * PodDisruptionBudgets, see kubernetes/kubernetesNodeDrain.ts) before the server it depends on is
 * deleted. The member-sized successor of the dynamic KubernetesNodeDrain: its state holds the Node
 * name and the timeout; the credentials come from the provider's configuration. Hetzner Cloud
 * members get one per server generation; bare-metal members one per member, `<node>-removal-drain`
 * (provider/bareMetalMemberResources.ts `removalDrain`), so a scale-down drains before the server goes.
 */
import * as pulumi from "@pulumi/pulumi";
import { checkedDrainTimeout, drainKubernetesNode } from "../kubernetes/kubernetesNodeDrain";
import { type ResourceHandler, changedKeys, keepNewInputs } from "./resourceHandler";
import { nodeNameFailures, positiveIntegerFailures } from "./inputRules";

export const NODE_DRAIN_TYPE = "nodefleet:kubernetes:NodeDrain";

/** Runs in the provider plugin. */
export const nodeDrainHandler: ResourceHandler = {
  check(news) {
    return {
      inputs: { nodeName: news.nodeName, timeoutSeconds: news.timeoutSeconds },
      failures: [...nodeNameFailures(news.nodeName), ...positiveIntegerFailures("timeoutSeconds", news.timeoutSeconds)],
    };
  },
  // Another Node name is another drain; a new timeout is stored in place.
  diff(olds, news) {
    return { changed: changedKeys(olds, news, ["nodeName", "timeoutSeconds"]), replaces: changedKeys(olds, news, ["nodeName"]) };
  },
  async create(inputs) {
    return { id: String(inputs.nodeName), outs: inputs };
  },
  update: keepNewInputs,
  async delete(_id, props, access) {
    await drainKubernetesNode(access.credentialsJson, String(props.nodeName), { timeoutSeconds: Number(props.timeoutSeconds) });
  },
};

export interface NodeDrainArgs {
  /** The Kubernetes Node name (for Hetzner Cloud, the generation's server name; on bare metal, the member's hostname). */
  readonly nodeName: string;
  /** Seconds the drain may take before it fails and the server stays. */
  readonly timeoutSeconds: number;
}

export class NodeDrain extends pulumi.CustomResource {
  declare readonly nodeName: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider; `opts.dependsOn` the server (Robot: the member's `-retire` command). */
  constructor(name: string, args: NodeDrainArgs, opts: pulumi.CustomResourceOptions) {
    super(NODE_DRAIN_TYPE, name, { nodeName: args.nodeName, timeoutSeconds: checkedDrainTimeout(name, args.timeoutSeconds) }, opts);
  }
}
