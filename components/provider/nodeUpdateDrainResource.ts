/**
 * `nodefleet:kubernetes:NodeUpdateDrain`: creating it drains the Node of a bare-metal member whose
 * machine is about to be reinstalled, replaced or re-joined in place (its Node name stays, so there
 * is no old Node to drain on delete); the update's first step depends on it, one per generation.
 * Deleting it changes nothing: the NodeMetadata update after the join uncordons the Node. The
 * plugin's successor of the dynamic KubernetesNodeUpdateDrain (kubernetes/kubernetesNodeDrain.ts),
 * running the same `drainKubernetesNode` with the provider's credentials.
 */
import * as pulumi from "@pulumi/pulumi";
import { NODE_DRAIN_REPLACE_ON_CHANGES, checkedDrainTimeout, drainKubernetesNode, updateDrainId } from "../kubernetes/kubernetesNodeDrain";
import { type ResourceHandler, changedKeys, keepNewInputs } from "./resourceHandler";
import { nodeNameFailures, positiveIntegerFailures, stringFailures } from "./inputRules";

export const NODE_UPDATE_DRAIN_TYPE = "nodefleet:kubernetes:NodeUpdateDrain";

/** Runs in the provider plugin. */
export const nodeUpdateDrainHandler: ResourceHandler = {
  check(news) {
    return {
      inputs: { nodeName: news.nodeName, generation: news.generation, timeoutSeconds: news.timeoutSeconds },
      failures: [
        ...nodeNameFailures(news.nodeName),
        ...stringFailures("generation", news.generation),
        ...positiveIntegerFailures("timeoutSeconds", news.timeoutSeconds),
      ],
    };
  },
  // Another Node or generation drains again; a new timeout is stored in place.
  diff(olds, news) {
    return {
      changed: changedKeys(olds, news, [...NODE_DRAIN_REPLACE_ON_CHANGES, "timeoutSeconds"]),
      replaces: changedKeys(olds, news, NODE_DRAIN_REPLACE_ON_CHANGES),
    };
  },
  // A Node not registered yet counts as drained.
  async create(inputs, access) {
    await drainKubernetesNode(access.credentialsJson, String(inputs.nodeName), { timeoutSeconds: Number(inputs.timeoutSeconds) });
    return { id: updateDrainId(String(inputs.nodeName), String(inputs.generation)), outs: inputs };
  },
  update: keepNewInputs,
  async delete() {},
};

export interface NodeUpdateDrainArgs {
  /** The Kubernetes Node name (the member's hostname). */
  readonly nodeName: string;
  /** The generation the member's machine is reinstalled, replaced or re-joined at once the drain is done. */
  readonly generation: string;
  /** Seconds the drain may take before it fails and the update waits. Default 600. */
  readonly timeoutSeconds?: number;
}

export class NodeUpdateDrain extends pulumi.CustomResource {
  declare readonly nodeName: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider. */
  constructor(name: string, args: NodeUpdateDrainArgs, opts: pulumi.CustomResourceOptions) {
    const timeoutSeconds = checkedDrainTimeout(name, args.timeoutSeconds);
    super(NODE_UPDATE_DRAIN_TYPE, name, { nodeName: args.nodeName, generation: args.generation, timeoutSeconds }, opts);
  }
}
