/**
 * The answer to a create that names no autoscaled pool. A static pool's name is the likely mistake
 * (its members come from git's stack config and `pulumi up`, never from the API), so the answer
 * says which mode the named pool has and lists the pools that would take the request.
 */
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { nearestName } from "../../components/shared/nearestName";
import { ApiError } from "./apiError";

export function poolNotFoundError(fleet: Pick<FleetSpec, "cluster" | "pools">, poolName: string): ApiError {
  const autoscaled = fleet.pools.filter((p) => p.provider === "hcloud" && p.mode === "autoscaled").map((p) => p.name);
  const listed =
    autoscaled.length > 0
      ? `the autoscaled pools are: ${autoscaled.join(", ")}`
      : "the cluster has no autoscaled pool (an hcloud pool with mode: autoscaled in nodefleet:pools)";
  const index = fleet.pools.findIndex((p) => p.name === poolName);
  const pool = fleet.pools[index];
  // `pools` (the autoscaled ones) is what clients read; `mode` and `provider` say what the named pool is.
  if (pool) {
    return new ApiError(
      "PoolNotFound",
      `pool ${poolName} of cluster ${fleet.cluster.id} is a ${pool.mode} pool (provider ${pool.provider}, nodefleet:pools[${index}]): its members are declared in the stack config and applied by pulumi up, and the API creates nodes only in autoscaled pools; ${listed}`,
      { pool: poolName, mode: pool.mode, provider: pool.provider, pools: autoscaled },
    );
  }
  const nearest = nearestName(poolName, autoscaled);
  return new ApiError(
    "PoolNotFound",
    `cluster ${fleet.cluster.id} has no pool ${poolName}${nearest ? ` (did you mean ${nearest}?)` : ""}; ${listed}`,
    { pool: poolName, pools: autoscaled },
  );
}
