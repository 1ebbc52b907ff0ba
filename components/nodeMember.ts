/**
 * The provider-neutral description of one pool member: who the node is in Kubernetes (name,
 * providerID, labels, taints) and where it runs. Every pool component (hcloud, Elastic Metal, the
 * API's autoscaled members) renders its servers and bootstrap from these.
 */
import type { ClusterSpec, Taint } from "./fleetSpec";

export interface NodeMember {
  /** Stable node id inside the cluster, e.g. `hel1-general-0`; part of the providerID. */
  readonly nodeId: string;
  /** Kubernetes node name and server hostname: `<clusterId>-<nodeId>` (a valid DNS label). */
  readonly hostname: string;
  /** `<scheme>:///<clusterId>/<nodeId>`. */
  readonly providerID: string;
  readonly pool: string;
  /** Server type (hcloud) or offer name (Elastic Metal). */
  readonly serverType: string;
  /** Hetzner location (`hel1`) or Scaleway zone (`fr-par-2`): the node's topology.kubernetes.io/zone. */
  readonly location: string;
  /** Labels the node registers with (pool labels plus nodefleet's own); all accepted by the kubelet. */
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

export const OWNERSHIP_LABELS = {
  cluster: "nodefleet.io/cluster",
  pool: "nodefleet.io/pool",
  node: "nodefleet.io/node",
} as const;

export function providerIdFor(cluster: Pick<ClusterSpec, "id" | "providerIdScheme">, nodeId: string): string {
  return `${cluster.providerIdScheme}:///${cluster.id}/${nodeId}`;
}

export function hostnameFor(cluster: Pick<ClusterSpec, "id">, nodeId: string): string {
  return `${cluster.id}-${nodeId}`;
}

export interface MemberTemplate {
  readonly pool: string;
  readonly serverType: string;
  readonly location: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

/** Builds a member from its pool template; nodefleet's labels come last so a pool cannot spoof them. */
export function nodeMember(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  template: MemberTemplate,
  nodeId: string,
): NodeMember {
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

/** Node ids of a static pool: `<pool>-<i>` for replicas, `<pool>-<name>` for an explicit nodes list. */
export function staticNodeIds(pool: { name: string; replicas?: number; nodes?: readonly string[] }): string[] {
  if (pool.nodes) return pool.nodes.map((n) => `${pool.name}-${n}`);
  return Array.from({ length: pool.replicas ?? 0 }, (_, i) => `${pool.name}-${i}`);
}
