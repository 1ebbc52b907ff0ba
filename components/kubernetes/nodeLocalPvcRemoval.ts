/**
 * Removes the PVCs bound to a departing node's local PVs. A node-local PV (local NVMe) cannot follow
 * its server, so without this the replacement's StatefulSet pod stays Pending on an unbindable
 * volume; deleting the claim lets it provision a fresh one (the data is regenerable cache).
 *
 * A `pulumi.dynamic` resource per member, keyed on the server id: deleting the member, or replacing
 * its server, runs `delete`, which lists the PVs and deletes the claims of those of the storage
 * class pinned (node affinity `kubernetes.io/hostname`) to the node, through kubernetesApiClient.ts
 * (built-ins only, from the credentials the program extracted). Members created since nodefleet's
 * plugin get its NodeLocalPvcRemoval instead (provider/nodeLocalPvcRemovalResource.ts), which runs
 * the same `removeNodeLocalClaims`; this one stays for the members created before.
 */
import * as pulumi from "@pulumi/pulumi";
import { type KubernetesCredentials, kubernetesApiRequest, secretCredentialsJson } from "./kubernetesApiClient";

export interface ClaimRef {
  readonly namespace: string;
  readonly name: string;
}

interface PvListItem {
  spec?: {
    storageClassName?: string;
    claimRef?: { namespace?: string; name?: string };
    nodeAffinity?: {
      required?: { nodeSelectorTerms?: Array<{ matchExpressions?: Array<{ key?: string; operator?: string; values?: string[] }> }> };
    };
  };
}

/** The claims bound to PVs of `storageClass` whose node affinity pins them to `nodeName`. */
export function nodeLocalClaims(pvList: unknown, nodeName: string, storageClass: string): ClaimRef[] {
  const items = ((pvList as { items?: unknown } | null)?.items ?? []) as PvListItem[];
  const claims: ClaimRef[] = [];
  for (const pv of Array.isArray(items) ? items : []) {
    const spec = pv?.spec;
    if (spec?.storageClassName !== storageClass) continue;
    const claim = spec.claimRef;
    if (!claim?.namespace || !claim.name) continue;
    const pinned = (spec.nodeAffinity?.required?.nodeSelectorTerms ?? []).some((term) =>
      (term.matchExpressions ?? []).some(
        (e) => e.key === "kubernetes.io/hostname" && (e.operator ?? "In") === "In" && (e.values ?? []).includes(nodeName),
      ),
    );
    if (pinned) claims.push({ namespace: claim.namespace, name: claim.name });
  }
  return claims;
}

/** Deletes the node's local-volume claims; returns what it deleted. */
export async function removeNodeLocalClaims(credentialsJson: string, nodeName: string, storageClass: string): Promise<ClaimRef[]> {
  if (!credentialsJson) {
    throw new Error(
      `cannot remove node ${nodeName}'s ${storageClass} claims: no usable kubeconfig was configured when the node was declared`,
    );
  }
  const creds = JSON.parse(credentialsJson) as KubernetesCredentials;
  const claims = nodeLocalClaims(await kubernetesApiRequest(creds, "GET", "/api/v1/persistentvolumes"), nodeName, storageClass);
  for (const claim of claims) {
    await kubernetesApiRequest(
      creds,
      "DELETE",
      `/api/v1/namespaces/${encodeURIComponent(claim.namespace)}/persistentvolumeclaims/${encodeURIComponent(claim.name)}`,
    );
  }
  return claims;
}

interface PvcRemovalState {
  nodeName: string;
  storageClass: string;
  serverId: string;
  credentials: string;
}

/** Inputs whose change replaces the removal (the old one deleted first, reaping the departed volumes' claims). */
export const NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES = ["nodeName", "serverId", "storageClass"] as const;

/** The removal's id: the Node and the server its volumes live on. */
export const pvcRemovalId = (nodeName: string, serverId: string): string => `${nodeName}/${serverId}`;

/** Exported for tests. A new server id replaces the resource, so the departed server's claims go. */
export const nodeLocalPvcRemovalProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: PvcRemovalState) {
    return { id: pvcRemovalId(inputs.nodeName, inputs.serverId), outs: inputs };
  },
  async diff(_id: string, olds: PvcRemovalState, news: PvcRemovalState) {
    const replaces = NODE_LOCAL_PVC_REMOVAL_REPLACE_ON_CHANGES.filter((k) => olds[k] !== news[k]);
    return { changes: replaces.length > 0 || olds.credentials !== news.credentials, replaces, deleteBeforeReplace: true };
  },
  async update(_id: string, _olds: PvcRemovalState, news: PvcRemovalState) {
    return { outs: news };
  },
  async delete(_id: string, props: PvcRemovalState) {
    await removeNodeLocalClaims(props.credentials, props.nodeName, props.storageClass);
  },
};

export interface NodeLocalPvcRemovalArgs {
  /** The Node name (hostname) the local PVs are pinned to. */
  readonly nodeName: string;
  /** The node-local StorageClass. */
  readonly storageClass: string;
  /** The server the volumes live on; a new server means the old volumes are gone. */
  readonly serverId: pulumi.Input<string>;
  /** Kubeconfig allowed to list PVs and delete PVCs (token or client certificate); a secret. */
  readonly kubeconfig: pulumi.Input<string>;
}

/** `pulumi-nodejs:dynamic/nodefleet:NodeLocalPvcRemoval`. */
export class NodeLocalPvcRemoval extends pulumi.dynamic.Resource {
  constructor(name: string, args: NodeLocalPvcRemovalArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = secretCredentialsJson(args.kubeconfig, `node ${args.nodeName}: its local PVCs cannot be removed on deletion`);
    super(
      nodeLocalPvcRemovalProvider,
      name,
      { nodeName: args.nodeName, storageClass: args.storageClass, serverId: args.serverId, credentials },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "NodeLocalPvcRemoval",
    );
  }
}
