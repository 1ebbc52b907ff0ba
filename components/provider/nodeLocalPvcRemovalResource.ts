/**
 * `nodefleet:kubernetes:NodeLocalPvcRemoval`: deleting it deletes the PVCs bound to the node-local PVs
 * of a departing server (kubernetes/nodeLocalPvcRemoval.ts says why), keyed on the server id so a
 * replaced server's claims go too. The plugin's successor of the dynamic NodeLocalPvcRemoval,
 * running the same `removeNodeLocalClaims` with the provider's credentials.
 */
import * as pulumi from "@pulumi/pulumi";
import { NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES, pvcRemovalId, removeNodeLocalClaims } from "../kubernetes/nodeLocalPvcRemoval";
import { type ResourceHandler, changedKeys, keepNewInputs } from "./resourceHandler";
import { nodeNameFailures, stringFailures } from "./inputRules";

export const NODE_LOCAL_PVC_REMOVAL_TYPE = "nodefleet:kubernetes:NodeLocalPvcRemoval";

/** Runs in the provider plugin. */
export const nodeLocalPvcRemovalHandler: ResourceHandler = {
  check(news) {
    return {
      inputs: { nodeName: news.nodeName, storageClass: news.storageClass, serverId: news.serverId },
      failures: [
        ...nodeNameFailures(news.nodeName),
        ...stringFailures("storageClass", news.storageClass),
        ...stringFailures("serverId", news.serverId),
      ],
    };
  },
  // Every input identifies the volumes: a change replaces, the old one first (its claims go before
  // the new server's volumes are claimed), as the dynamic version's diff answers.
  diff(olds, news) {
    const replaces = changedKeys(olds, news, NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES);
    return { changed: replaces, replaces, deleteBeforeReplace: true };
  },
  async create(inputs) {
    return { id: pvcRemovalId(String(inputs.nodeName), String(inputs.serverId)), outs: inputs };
  },
  update: keepNewInputs,
  async delete(_id, props, access) {
    await removeNodeLocalClaims(access.credentialsJson, String(props.nodeName), String(props.storageClass));
  },
};

export interface NodeLocalPvcRemovalArgs {
  /** The Node name (hostname) the local PVs are pinned to. */
  readonly nodeName: string;
  /** The node-local StorageClass. */
  readonly storageClass: string;
  /** The server the volumes live on; a new server means the old volumes are gone. */
  readonly serverId: pulumi.Input<string>;
}

export class NodeLocalPvcRemoval extends pulumi.CustomResource {
  declare readonly nodeName: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider; `opts.dependsOn` the server. */
  constructor(name: string, args: NodeLocalPvcRemovalArgs, opts: pulumi.CustomResourceOptions) {
    super(NODE_LOCAL_PVC_REMOVAL_TYPE, name, { nodeName: args.nodeName, storageClass: args.storageClass, serverId: args.serverId }, opts);
  }
}
