/**
 * Which location each member of a static Hetzner Cloud pool with several `locations` runs in. Pure;
 * the rule (docs/fleet-spec.md "Several locations"):
 * 1. A member with a server in a listed location keeps that location (the first such in list order
 *    if it has servers in several, as during a move), so adding a member or a location never moves
 *    anyone, and a run given its own result changes nothing.
 * 2. The other members, in member order, each go to the listed location with the fewest members so
 *    far, ties to the earlier one in `locations`. A new pool so gets member i -> locations[i mod n];
 *    a removed location's members move to the emptiest remaining ones, and only they move.
 */

export interface LocationSpreadArgs {
  /** The pool's member ids in member order (fleet/naming.ts `staticNodeIds`). */
  readonly nodeIds: readonly string[];
  /** The pool's locations in spec order; unique, at least one. */
  readonly locations: readonly string[];
  /** Where each member's servers are now (previous run's outputs); several entries per node during a move. */
  readonly current: ReadonlyArray<{ readonly nodeId: string; readonly location: string }>;
}

/** nodeId -> location, for every member of `nodeIds`. */
export function spreadAcrossLocations(args: LocationSpreadArgs): Map<string, string> {
  const { nodeIds, locations, current } = args;
  if (locations.length === 0) throw new RangeError("locations must name at least one location");
  const order = new Map(locations.map((location, index) => [location, index]));
  const counts = new Map(locations.map((location) => [location, 0]));
  const assigned = new Map<string, string>();
  const kept = new Map<string, string>();
  for (const server of current) {
    const rank = order.get(server.location);
    if (rank === undefined) continue;
    const earlier = kept.get(server.nodeId);
    if (earlier === undefined || rank < order.get(earlier)!) kept.set(server.nodeId, server.location);
  }
  const members = new Set(nodeIds);
  for (const [nodeId, location] of kept) {
    if (!members.has(nodeId)) continue;
    assigned.set(nodeId, location);
    counts.set(location, counts.get(location)! + 1);
  }
  for (const nodeId of nodeIds) {
    if (assigned.has(nodeId)) continue;
    let best = locations[0];
    for (const location of locations) if (counts.get(location)! < counts.get(best)!) best = location;
    assigned.set(nodeId, best);
    counts.set(best, counts.get(best)! + 1);
  }
  return assigned;
}
