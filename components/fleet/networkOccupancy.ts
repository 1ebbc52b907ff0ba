/**
 * How many servers a static Hetzner Cloud pool's rollout must count as already on the cluster
 * network besides its own: the other static pools' servers now, and every autoscaled pool at its
 * `maxNodes`, counting only pools on the private network (`network: public` pools join none). The
 * scaling API may create up to maxNodes at any moment, and the config check keeps those pools'
 * static replicas plus autoscaled maxNodes within one network's 100; a surge may only use what
 * neither claims, or it races an API create for the last places.
 *
 * A pool is counted by its `network` in the spec: a pool just moved to public still has old servers
 * on the network until its rollout replaces them, which this undercounts; Hetzner then refuses a
 * create past the 100 and the run fails without touching running servers.
 */
import type { PoolSpec } from "./fleetSpec";

/** True for the Hetzner Cloud pools whose servers join the cluster's private network. */
function onPrivateNetwork(pool: PoolSpec): boolean {
  return pool.provider === "hcloud" && pool.network !== "public";
}

export function serversOutsidePool(
  pools: readonly PoolSpec[],
  current: Readonly<Record<string, readonly unknown[]>>,
  poolName: string,
): number {
  const onNetwork = new Set(pools.filter(onPrivateNetwork).map((pool) => pool.name));
  const otherStatic = Object.entries(current)
    .filter(([other]) => other !== poolName && onNetwork.has(other))
    .reduce((n, [, servers]) => n + servers.length, 0);
  const autoscaled = pools.reduce(
    (n, pool) => (pool.provider === "hcloud" && pool.mode === "autoscaled" && onPrivateNetwork(pool) ? n + pool.limits.maxNodes : n),
    0,
  );
  return otherStatic + autoscaled;
}

/** The static Hetzner Cloud pools' members on the private network, as the spec declares them (replicas or nodes listed). */
export function staticServersOnNetwork(pools: readonly PoolSpec[]): number {
  return pools.reduce(
    (n, pool) =>
      pool.provider === "hcloud" && pool.mode === "static" && onPrivateNetwork(pool) ? n + (pool.nodes?.length ?? pool.replicas ?? 0) : n,
    0,
  );
}
