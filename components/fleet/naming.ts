/**
 * How a node is named: its node id inside a static pool, its hostname (the Kubernetes node name)
 * and its providerID. Both the fleet spec (name-length checks) and the node member contract
 * (nodeMember.ts) use these, so they depend on nothing else.
 */

export function providerIdFor(cluster: { readonly id: string; readonly providerIdScheme: string }, nodeId: string): string {
  return `${cluster.providerIdScheme}:///${cluster.id}/${nodeId}`;
}

export function hostnameFor(cluster: { readonly id: string }, nodeId: string): string {
  return `${cluster.id}-${nodeId}`;
}

/** Node ids of a static pool: `<pool>-<i>` for replicas, `<pool>-<name>` for an explicit nodes list. */
export function staticNodeIds(pool: { name: string; replicas?: number; nodes?: readonly string[] }): string[] {
  if (pool.nodes) return pool.nodes.map((n) => `${pool.name}-${n}`);
  return Array.from({ length: pool.replicas ?? 0 }, (_, i) => `${pool.name}-${i}`);
}
