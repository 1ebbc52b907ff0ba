/**
 * Hetzner Cloud pools past the private network's 100 servers: what a fleet must hold for a pool with
 * `network: public` (its servers join no Hetzner network, nodes talk over public addresses), and
 * how the pools share the network and the project's placement groups. Hetzner firewall rules take
 * CIDRs only (no label selectors), so the firewall cannot admit "the cluster's own nodes" by
 * ownership: node-to-node traffic must ride the CNI's WireGuard tunnel, whose port is open to every
 * address and answers only its peers' keys. Design and sources: docs/networking.md.
 */
import { cidrContains, parseIpv4Cidr } from "../shared/cidr";
import {
  HCLOUD_MAX_PLACEMENT_GROUPS_PER_PROJECT,
  HCLOUD_MAX_SERVERS_PER_NETWORK,
  HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP,
} from "./hcloudLocations";

/** The CNI encryptions nodefleet can open the firewall for (`cluster.cniEncryption`). */
export const CNI_ENCRYPTIONS = ["cilium-wireguard", "flannel-wireguard"] as const;
export type CniEncryption = (typeof CNI_ENCRYPTIONS)[number];

/**
 * The UDP ports each CNI's WireGuard listens on, by its own documentation: Cilium 51871
 * (docs.cilium.io, WireGuard transparent encryption); flannel's wireguard backend 51820 (IPv4) and
 * 51821 (IPv6) (flannel Documentation/backends.md). Cilium's port is open on every cluster firewall
 * already (firewallRules.ts), so it adds nothing here.
 */
export const CNI_WIREGUARD_PORTS: Readonly<Record<CniEncryption, readonly string[]>> = {
  "cilium-wireguard": ["51871"],
  "flannel-wireguard": ["51820", "51821"],
};

/** Addresses no node outside a private network reaches: RFC 1918, shared address space (RFC 6598), loopback, link-local. */
const NON_PUBLIC_BLOCKS = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16"].map((text) =>
  parseIpv4Cidr(text)!,
);

/** True when every address of the IPv4 CIDR (or address) lies in a non-public block. */
export function isNonPublicIpv4(cidrOrAddress: string): boolean {
  const cidr = parseIpv4Cidr(cidrOrAddress.includes("/") ? cidrOrAddress : `${cidrOrAddress}/32`);
  return cidr !== undefined && NON_PUBLIC_BLOCKS.some((block) => cidrContains(block, cidr));
}

/** One Hetzner Cloud pool as the cross-pool checks see it (read from the raw config). */
export interface HcloudPoolSize {
  readonly index: number;
  readonly name: string;
  readonly network: "private" | "public";
  /** Static replicas (or nodes listed), or autoscaled maxNodes. */
  readonly servers: number;
  readonly mode: "static" | "autoscaled";
  /** In spread placement groups (`placement` spread). */
  readonly spread: boolean;
  /** How many locations it spreads over, each with spread groups of its own. Default 1. */
  readonly locations?: number;
}

interface Problem {
  readonly path: PropertyKey[];
  readonly message: string;
}

const NETWORKS_DOC = "https://docs.hetzner.com/cloud/networks/overview";
const PLACEMENT_DOC = "https://docs.hetzner.com/cloud/placement-groups/overview";

/**
 * The network's 100 is shared by the pools on it; a pool on public addresses takes none of it.
 * Hetzner's spread placement groups (10 servers each, 50 a project) bound every pool with
 * `placement: spread`, on the network or not: the groups such pools need at their full size are a
 * floor on what the project must hold.
 */
export function hcloudCapacityProblems(pools: readonly HcloudPoolSize[]): Problem[] {
  const problems: Problem[] = [];
  const onNetwork = pools.filter((p) => p.network === "private");
  const total = onNetwork.reduce((n, p) => n + p.servers, 0);
  if (total > HCLOUD_MAX_SERVERS_PER_NETWORK) {
    const listed = [...onNetwork]
      .sort((a, b) => b.servers - a.servers || a.index - b.index)
      .map((p) => `${p.name} ${p.servers}${p.mode === "autoscaled" ? " (maxNodes)" : ""}`)
      .join(", ");
    problems.push({
      path: ["nodefleet:pools"],
      message:
        `the Hetzner Cloud pools on the private network (${listed}) can hold ${total} servers, more than the ` +
        `${HCLOUD_MAX_SERVERS_PER_NETWORK} one Hetzner network allows (${NETWORKS_DOC}); lower replicas or maxNodes, or set ` +
        "network: public on the largest pools so that their servers join no network (needs cluster.nodeAddress: public and " +
        "cluster.cniEncryption; docs/networking.md)",
    });
  }
  // A static pool's locations differ by at most one member (fleet/locationSpread.ts), so n locations
  // need at most ceil(servers / 10) + n - 1 groups; one location: ceil(servers / 10), as before. The
  // scaling API's members take a pool-wide slot (group = slot / 10, per location) and land wherever
  // capacity is, so each location may touch every group index: n * ceil(servers / 10) at worst.
  const groupsOf = (p: HcloudPoolSize) => {
    if (p.servers === 0) return 0;
    const perLocation = Math.ceil(p.servers / HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP);
    const locations = Math.min(p.locations ?? 1, p.servers);
    return p.mode === "autoscaled" ? perLocation * locations : perLocation + locations - 1;
  };
  const groups = pools.filter((p) => p.spread).reduce((n, p) => n + groupsOf(p), 0);
  if (groups > HCLOUD_MAX_PLACEMENT_GROUPS_PER_PROJECT) {
    problems.push({
      path: ["nodefleet:pools"],
      message:
        `the Hetzner Cloud pools with placement spread need at least ${groups} spread placement groups at their full size (one per ` +
        `${HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP} servers of a pool in one location), more than the ${HCLOUD_MAX_PLACEMENT_GROUPS_PER_PROJECT} ` +
        `a Hetzner project holds (${PLACEMENT_DOC}); set placement: none on the largest pools, lower replicas or maxNodes, or merge small pools`,
    });
  }
  return problems;
}

/** What a cluster with pools on public addresses must state; `cluster` is the raw `nodefleet:cluster`. */
export function publicNetworkProblems(pools: readonly HcloudPoolSize[], cluster: unknown): Problem[] {
  const publicPools = pools.filter((p) => p.network === "public");
  if (publicPools.length === 0) return [];
  const raw = (typeof cluster === "object" && cluster !== null ? cluster : {}) as {
    nodeAddress?: unknown;
    cniEncryption?: unknown;
    controlPlaneAddresses?: unknown;
    apiServer?: unknown;
  };
  const names = publicPools.map((p) => p.name).join(", ");
  const because = `pool${publicPools.length > 1 ? "s" : ""} ${names} use${publicPools.length > 1 ? "" : "s"} network: public`;
  const problems: Problem[] = [];
  if (raw.nodeAddress !== "public") {
    problems.push({
      path: ["nodefleet:cluster", "nodeAddress"],
      message:
        `must be public when ${because}: their nodes have no private address, so every node must register its public one ` +
        "as InternalIP for nodes on and off the network to reach each other",
    });
  }
  if (raw.cniEncryption === undefined) {
    problems.push({
      path: ["nodefleet:cluster", "cniEncryption"],
      message:
        `is required when ${because}: pod traffic between nodes crosses the internet, and Hetzner firewall rules take CIDRs, ` +
        "not the cluster's nodes; configure your CNI's WireGuard encryption and name it here (cilium-wireguard or flannel-wireguard)",
    });
  }
  const controlPlane = Array.isArray(raw.controlPlaneAddresses)
    ? raw.controlPlaneAddresses.filter((c): c is string => typeof c === "string" && parseIpv4Cidr(c) !== undefined)
    : [];
  if (controlPlane.length > 0 && controlPlane.every(isNonPublicIpv4)) {
    problems.push({
      path: ["nodefleet:cluster", "controlPlaneAddresses"],
      message:
        `needs the control plane's public address when ${because}: the firewall admits the kubelet port (10250/tcp) from these ` +
        `addresses, and a node off the network is reached on its public one (none of ${controlPlane.join(", ")} is public)`,
    });
  }
  const host = typeof raw.apiServer === "string" ? /^https:\/\/([^\s/:]+)/.exec(raw.apiServer)?.[1] : undefined;
  if (host !== undefined && /^\d{1,3}(\.\d{1,3}){3}$/.test(host) && isNonPublicIpv4(host)) {
    problems.push({
      path: ["nodefleet:cluster", "apiServer"],
      message: `${host} is a private address, which nodes off the private network cannot reach, and ${because}; use the API server's public address or name`,
    });
  }
  return problems;
}
