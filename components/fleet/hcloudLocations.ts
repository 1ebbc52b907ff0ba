/**
 * Hetzner Cloud locations and the network zone each belongs to. A server can only join a network
 * subnet of its own zone. Source: https://docs.hetzner.cloud/#locations-get-all-locations
 */
export const HCLOUD_LOCATION_ZONES: Readonly<Record<string, string>> = {
  fsn1: "eu-central",
  nbg1: "eu-central",
  hel1: "eu-central",
  ash: "us-east",
  hil: "us-west",
  sin: "ap-southeast",
};

export const HCLOUD_NETWORK_ZONES = ["eu-central", "us-east", "us-west", "ap-southeast"] as const;

/**
 * Hetzner's limits that shape placement and validation. Sources: placement groups
 * https://docs.hetzner.com/cloud/placement-groups/overview (10 servers a spread group, 50 groups a
 * project), networks https://docs.hetzner.com/cloud/networks/overview (100 servers, 50 subnets).
 */
export const HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP = 10;
export const HCLOUD_MAX_PLACEMENT_GROUPS_PER_PROJECT = 50;
export const HCLOUD_MAX_SERVERS_PER_NETWORK = 100;
/**
 * The most members one Hetzner Cloud pool may have (static replicas, autoscaled maxNodes). A pool on
 * the private network is held to the network's 100 by the cross-pool check; a pool on public
 * addresses (`network: public`) only to this, a bound on one stack's size, not a Hetzner limit.
 */
export const HCLOUD_MAX_POOL_SERVERS = 1000;
export const HCLOUD_MAX_SUBNETS_PER_NETWORK = 50;
export const HCLOUD_MAX_USER_DATA_BYTES = 32 * 1024;

/** A location's `topology.kubernetes.io/region`: its network zone (`hel1` -> `eu-central`). */
export function hcloudRegion(location: string): string {
  const zone = HCLOUD_LOCATION_ZONES[location];
  if (zone === undefined) throw new Error(`${location} is not a Hetzner Cloud location`);
  return zone;
}
