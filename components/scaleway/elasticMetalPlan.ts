/**
 * The pure part of an Elastic Metal pool: its members, how each is bootstrapped (cloud-init or SSH
 * self-join), the generation that names a member's bootstrap token (fresh when the server is
 * replaced), and the label carrying the private IPv4.
 */
import type { ClusterSpec, ScalewayElasticMetalPool } from "../fleet/fleetSpec";
import { elasticMetalOs } from "./elasticMetalOs";
import { generationHash } from "../fleet/generationSuffix";
import { staticNodeIds } from "../fleet/naming";
import { type NodeMember, nodeMember } from "../fleet/nodeMember";

/** The label carrying the node's private-network IPv4 (known from IPAM before the server exists). */
export const PRIVATE_IPV4_LABEL = "nodefleet.io/private-ipv4";

/** Server properties whose change replaces the server (a new order or install), not an update. */
export const ELASTIC_METAL_REPLACE_ON_CHANGES = ["offer", "os", "zone"] as const;

export type BootstrapMethod = "cloud-init" | "ssh";

/** `auto` picks cloud-init where the OS runs it; an explicit choice wins. */
export function bootstrapMethod(pool: Pick<ScalewayElasticMetalPool, "bootstrap" | "os">): BootstrapMethod {
  if (pool.bootstrap === "cloud-init" || pool.bootstrap === "ssh") return pool.bootstrap;
  return elasticMetalOs(pool.os).cloudInit ? "cloud-init" : "ssh";
}

/** `fr-par-2` -> `fr-par`: private networks and IPAM are regional. */
export function scalewayRegion(zone: string): string {
  const match = /^([a-z]{2}-[a-z]{3})-\d$/.exec(zone);
  if (!match) throw new Error(`zone ${JSON.stringify(zone)} is not a Scaleway zone such as fr-par-2`);
  return match[1];
}

/** `[a-z0-9]{6}` from the inputs that replace the server: a replacement gets a fresh bootstrap token. */
export function elasticMetalGeneration(pool: Pick<ScalewayElasticMetalPool, "zone" | "offer" | "os">): string {
  return generationHash({ zone: pool.zone, offer: pool.offer, os: pool.os });
}

export function elasticMetalMembers(cluster: Pick<ClusterSpec, "id" | "providerIdScheme">, pool: ScalewayElasticMetalPool): NodeMember[] {
  const template = { pool: pool.name, serverType: pool.offer, location: pool.zone, labels: pool.labels, taints: pool.taints };
  return staticNodeIds(pool).map((nodeId) => nodeMember(cluster, template, nodeId));
}

/**
 * `172.16.0.5/22` from the IPAM address: its own prefix when IPAM gives one (the network's real
 * subnet), else the configured subnet's.
 */
export function privateAddressCidr(address: string, subnet: string): { ipv4: string; cidr: string } {
  const [ipv4, ownPrefix] = address.split("/");
  const prefix = ownPrefix ?? subnet.split("/")[1];
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ipv4 ?? "") || !/^\d{1,2}$/.test(prefix ?? "")) {
    throw new Error(`cannot build a private address from ${JSON.stringify(address)} in ${JSON.stringify(subnet)}`);
  }
  return { ipv4, cidr: `${ipv4}/${prefix}` };
}
