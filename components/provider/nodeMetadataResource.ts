/**
 * `nodefleet:kubernetes:NodeMetadata`: keeps a bare-metal member's Node labels and taints as the pool
 * declares them, and uncordons it after an update (a moved `generation`). The plugin's successor of
 * the dynamic KubernetesNodeMetadata (kubernetes/kubernetesNodeMetadata.ts), running the same
 * `convergeNodeMetadata`; its state holds what it declared, the credentials come from the provider.
 */
import * as pulumi from "@pulumi/pulumi";
import type { Taint } from "../fleet/fleetSpec";
import {
  DEFAULT_REGISTRATION_TIMEOUT_SECONDS,
  type DeclaredNodeMetadata,
  convergeNodeMetadata,
  declaredTaints,
} from "../kubernetes/kubernetesNodeMetadata";
import { type ResourceHandler, changedKeys } from "./resourceHandler";
import { labelsFailures, nodeNameFailures, optionalStringFailures, positiveIntegerFailures, taintsFailures } from "./inputRules";

export const NODE_METADATA_TYPE = "nodefleet:kubernetes:NodeMetadata";

/** Inputs whose change makes another resource: another Node. */
export const NODE_METADATA_REPLACE_ON_CHANGES = ["nodeName"] as const;

const INPUTS = ["nodeName", "labels", "taints", "registrationTimeoutSeconds", "generation"] as const;

/** Runs in the provider plugin. */
export const nodeMetadataHandler: ResourceHandler = {
  check(news) {
    return {
      inputs: Object.fromEntries(INPUTS.filter((k) => news[k] !== undefined).map((k) => [k, news[k]])),
      failures: [
        ...nodeNameFailures(news.nodeName),
        ...labelsFailures(news.labels),
        ...taintsFailures(news.taints),
        ...positiveIntegerFailures("registrationTimeoutSeconds", news.registrationTimeoutSeconds),
        ...optionalStringFailures("generation", news.generation),
      ],
    };
  },
  // New labels, taints or generation converge the Node in place; another Node name is another resource.
  diff(olds, news) {
    return { changed: changedKeys(olds, news, INPUTS), replaces: changedKeys(olds, news, NODE_METADATA_REPLACE_ON_CHANGES) };
  },
  async create(inputs, access) {
    await convergeNodeMetadata(access.credentialsJson, undefined, inputs as unknown as DeclaredNodeMetadata);
    return { id: String(inputs.nodeName), outs: inputs };
  },
  async update(_id, olds, news, access) {
    await convergeNodeMetadata(access.credentialsJson, olds as unknown as DeclaredNodeMetadata, news as unknown as DeclaredNodeMetadata);
    return news;
  },
  // The Node goes with its member (its NodeRemoval); nothing to undo here.
  async delete() {},
};

export interface NodeMetadataArgs {
  /** The Kubernetes Node name (the member's hostname). */
  readonly nodeName: string;
  /** The pool's labels for the Node; keys set here and later dropped are removed. */
  readonly labels: Readonly<Record<string, pulumi.Input<string>>>;
  /** The pool's taints; matched on the Node by key and effect. */
  readonly taints: readonly Taint[];
  /** How long create and update wait for the Node to register. Default 1800 s. */
  readonly registrationTimeoutSeconds?: number;
  /** The member's machine generation: when it moves, the update after the join uncordons the Node. */
  readonly generation?: string;
}

export class NodeMetadata extends pulumi.CustomResource {
  declare readonly nodeName: pulumi.Output<string>;

  /** `opts.provider` must be the pool's ClusterAccessProvider. */
  constructor(name: string, args: NodeMetadataArgs, opts: pulumi.CustomResourceOptions) {
    super(
      NODE_METADATA_TYPE,
      name,
      {
        nodeName: args.nodeName,
        labels: args.labels,
        taints: declaredTaints(args.taints),
        registrationTimeoutSeconds: args.registrationTimeoutSeconds ?? DEFAULT_REGISTRATION_TIMEOUT_SECONDS,
        ...(args.generation !== undefined ? { generation: args.generation } : {}),
      },
      opts,
    );
  }
}
