/**
 * How a node is named: its node id inside a static pool, its hostname (the Kubernetes node name)
 * and its providerID. Both the fleet spec (name-length checks) and the node member contract
 * (nodeMember.ts) use these, so they depend on nothing else.
 */

export function providerIdFor(cluster: { readonly id: string; readonly providerIdScheme: string }, nodeId: string): string {
  return `${cluster.providerIdScheme}:///${cluster.id}/${nodeId}`;
}

/**
 * What a Hetzner Cloud member carries as its providerID with `cluster.hcloudProviderIds: hcloud`:
 * not an id yet (the server does not exist when its user data is rendered), but the instruction to
 * read it at boot. The bootstrap renders it as `hcloud://` followed by the metadata service's
 * instance-id (bootstrap/hcloudServerId.ts); outputs and the scaling API show `hcloudProviderId`.
 */
export const HCLOUD_PROVIDER_ID_FROM_METADATA = "hcloud://{instance-id}";

/**
 * The hcloud cloud controller manager's providerID of a Hetzner Cloud server, `hcloud://<server id>`
 * (github.com/hetznercloud/hcloud-cloud-controller-manager, internal/providerid/providerid.go).
 */
export function hcloudProviderId(serverId: string | number): string {
  return `hcloud://${serverId}`;
}

/** The providerID a Hetzner Cloud member is rendered with, by the cluster's `hcloudProviderIds`. */
export function hcloudMemberProviderId(
  cluster: { readonly id: string; readonly providerIdScheme: string; readonly hcloudProviderIds?: "nodefleet" | "hcloud" | undefined },
  nodeId: string,
): string {
  return cluster.hcloudProviderIds === "hcloud" ? HCLOUD_PROVIDER_ID_FROM_METADATA : providerIdFor(cluster, nodeId);
}

export function hostnameFor(cluster: { readonly id: string }, nodeId: string): string {
  return `${cluster.id}-${nodeId}`;
}

/** Node ids of a static pool: `<pool>-<i>` for replicas, `<pool>-<name>` for an explicit nodes list. */
export function staticNodeIds(pool: { name: string; replicas?: number; nodes?: readonly string[] }): string[] {
  if (pool.nodes) return pool.nodes.map((n) => `${pool.name}-${n}`);
  return Array.from({ length: pool.replicas ?? 0 }, (_, i) => `${pool.name}-${i}`);
}
