/**
 * The provider-neutral description of one pool member: who the node is in Kubernetes (name,
 * providerID, labels, taints) and where it runs. Every pool component (hcloud, Elastic Metal, the
 * API's autoscaled members) renders its servers and bootstrap from these.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, Taint } from "./fleetSpec";
import { hostnameFor, providerIdFor } from "./naming";

export interface NodeMember {
  /** Stable node id inside the cluster, e.g. `hel1-general-0`; part of the providerID. */
  readonly nodeId: string;
  /**
   * `<clusterId>-<nodeId>` (a valid DNS label): the Kubernetes node name and server hostname, except
   * on Hetzner Cloud, whose nodes add their server generation (`<hostname>-<generation>`, see
   * hcloud/hcloudServerPlan.ts) so that a replacement's old and new server are two Nodes.
   */
  readonly hostname: string;
  /**
   * `<scheme>:///<clusterId>/<nodeId>`; a Hetzner Cloud member of a cluster with `hcloudProviderIds:
   * hcloud` carries HCLOUD_PROVIDER_ID_FROM_METADATA instead (naming.ts): its id is read at boot.
   */
  readonly providerID: string;
  /** Name of the pool the member belongs to. */
  readonly pool: string;
  /** Server type (hcloud) or offer name (Elastic Metal). */
  readonly serverType: string;
  /** Hetzner location (`hel1`) or Scaleway zone (`fr-par-2`): the node's topology.kubernetes.io/zone. */
  readonly location: string;
  /** Labels the node registers with (pool labels plus nodefleet's own); all accepted by the kubelet. */
  readonly labels: Readonly<Record<string, string>>;
  /** Taints the node registers with (a node cannot change its own taints later). */
  readonly taints: readonly Taint[];
}

/** What every pool component reports per node (the stack's `nodes` output). */
export interface NodeOutput extends Pick<NodeMember, "nodeId" | "hostname" | "pool" | "serverType" | "location"> {
  /** The node's spec.providerID: the member's, or `hcloud://<server id>` once the server exists. */
  readonly providerID: pulumi.Input<string>;
  /** The provider's server id (Pulumi ids are strings). */
  readonly serverId: pulumi.Output<string>;
  /** Public IPv4 address, when the server has one. */
  readonly ipv4: pulumi.Output<string | undefined>;
  /** Address on the cluster's private network. */
  readonly privateIpv4: pulumi.Output<string | undefined>;
}

/** The identity part of a NodeOutput, taken from the member. */
export function nodeOutputIdentity(
  member: Pick<NodeMember, "nodeId" | "hostname" | "providerID" | "pool" | "serverType" | "location">,
): Pick<NodeOutput, "nodeId" | "hostname" | "providerID" | "pool" | "serverType" | "location"> {
  return {
    nodeId: member.nodeId,
    hostname: member.hostname,
    providerID: member.providerID,
    pool: member.pool,
    serverType: member.serverType,
    location: member.location,
  };
}

export const OWNERSHIP_LABELS = {
  cluster: "nodefleet.io/cluster",
  pool: "nodefleet.io/pool",
  node: "nodefleet.io/node",
} as const;

/** The pool-level part of a member: what all members of a pool (or of one admission snapshot) share. */
export interface MemberTemplate {
  /** Pool name. */
  readonly pool: string;
  /** Server type (hcloud) or offer name (Elastic Metal) of this member. */
  readonly serverType: string;
  /** Hetzner location or Scaleway zone. */
  readonly location: string;
  /** The pool's labels; nodefleet adds instance type, zone and ownership labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** The pool's taints. */
  readonly taints: readonly Taint[];
}

/** Builds a member from its pool template; nodefleet's labels come last so a pool cannot spoof them. */
export function nodeMember(cluster: Pick<ClusterSpec, "id" | "providerIdScheme">, template: MemberTemplate, nodeId: string): NodeMember {
  return {
    nodeId,
    hostname: hostnameFor(cluster, nodeId),
    providerID: providerIdFor(cluster, nodeId),
    pool: template.pool,
    serverType: template.serverType,
    location: template.location,
    labels: {
      ...template.labels,
      "node.kubernetes.io/instance-type": template.serverType,
      "topology.kubernetes.io/zone": template.location,
      [OWNERSHIP_LABELS.cluster]: cluster.id,
      [OWNERSHIP_LABELS.pool]: template.pool,
    },
    taints: template.taints,
  };
}
