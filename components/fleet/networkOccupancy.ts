/**
 * How many servers a static Hetzner Cloud pool's rollout must count as already on the cluster
 * network besides its own: the other static pools' servers now, and every autoscaled pool at its
 * `maxNodes`. The scaling API may create up to that at any moment, and the config check keeps
 * static replicas plus autoscaled maxNodes within one network's 100; a surge may only use what
 * neither claims, or it races an API create for the last places.
 */
import type { PoolSpec } from "./fleetSpec";

export function serversOutsidePool(
  pools: readonly PoolSpec[],
  current: Readonly<Record<string, readonly unknown[]>>,
  poolName: string,
): number {
  const otherStatic = Object.entries(current)
    .filter(([other]) => other !== poolName)
    .reduce((n, [, servers]) => n + servers.length, 0);
  const autoscaled = pools.reduce(
    (n, pool) => (pool.provider === "hcloud" && pool.mode === "autoscaled" ? n + pool.limits.maxNodes : n),
    0,
  );
  return otherStatic + autoscaled;
}
