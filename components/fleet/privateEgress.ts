/**
 * Hetzner Cloud pools without a public IPv4 (`publicIpv4: false`): their only way to the IPv4
 * internet (the join, k0s and package downloads, the API server's public address) is a NAT gateway
 * on the cluster's private network. Hetzner routes a network's traffic by its routes: a route
 * 0.0.0.0/0 via the gateway server's private IP sends what a node hands the network's gateway (the
 * first address of the network's range) on to the NAT server. The fleet names an existing gateway
 * (`nodefleet:network.natGateway`); nodefleet declares the route and the nodes' default route.
 * Design and sources: docs/networking.md, "Pools without public IPv4".
 */
import { isIPv4 } from "node:net";
import { cidrContainsAddress, hostAddress, parseIpv4Cidr } from "../shared/cidr";

/** Hetzner's own address on every network (its metadata and DHCP side); a route's gateway may not be it (Hetzner Cloud API, add_route). */
const HETZNER_RESERVED_GATEWAY = "172.31.1.1";

/** The route every node without public IPv4 needs on the network: everything not local, via the NAT gateway. */
export const DEFAULT_ROUTE_DESTINATION = "0.0.0.0/0";

/**
 * The network's gateway: the first address of its range, to which each server's private interface
 * routes the network (docs.hetzner.com/networking/networks/technical-concepts/architecture,
 * "Example routes": 10.0.0.0/16 via 10.0.0.1 on a cloud server).
 */
export function networkGateway(ipRange: string): string {
  const range = parseIpv4Cidr(ipRange);
  if (!range) throw new Error(`network ipRange ${JSON.stringify(ipRange)} must be an IPv4 CIDR`);
  return hostAddress(range, 1);
}

/** Why `natGateway` cannot be the gateway of a route in the network `ipRange`, if it cannot. */
export function natGatewayProblem(natGateway: string, ipRange: string): string | undefined {
  if (!isIPv4(natGateway)) return "natGateway must be an IPv4 address (the NAT server's private IP), such as 10.0.1.2";
  const range = parseIpv4Cidr(ipRange);
  if (!range) return undefined; // ipRange reports its own problem
  if (!cidrContainsAddress(range, natGateway))
    return `natGateway ${natGateway} must lie inside ipRange ${ipRange}: it is the private IP of your NAT server on this network`;
  if (natGateway === networkGateway(ipRange) || natGateway === HETZNER_RESERVED_GATEWAY)
    return `natGateway ${natGateway} is Hetzner's own gateway address, which a route may not use; give the NAT server's private IP`;
  return undefined;
}

/** One Hetzner Cloud pool's public addresses as the cross-field checks read them from the raw config. */
export interface PoolPublicAddresses {
  readonly index: number;
  readonly network: "private" | "public";
  readonly mode: "static" | "autoscaled";
  readonly publicIpv4: boolean;
  readonly publicIpv6: boolean;
}

interface Problem {
  readonly path: PropertyKey[];
  readonly message: string;
}

/**
 * The rule for a pool without public IPv4: it stays on the private network, the network names a
 * NAT gateway, and its nodes register their private address. Public IPv6 alone is not a way out:
 * Hetzner networks carry IPv4 only (docs.hetzner.com/cloud/networks/faq), so IPv6 would need a
 * dual-stack cluster, and the k0s release downloads (github.com) have no IPv6 address.
 */
export function privateEgressProblems(pools: readonly PoolPublicAddresses[], network: unknown, cluster: unknown): Problem[] {
  const natGateway = (network as { natGateway?: unknown } | undefined)?.natGateway;
  const nodeAddress = (cluster as { nodeAddress?: unknown } | undefined)?.nodeAddress;
  const problems: Problem[] = [];
  for (const pool of pools) {
    if (pool.publicIpv4) continue;
    const path = ["nodefleet:pools", pool.index, "publicIpv4"];
    if (pool.network === "public") {
      problems.push({
        path,
        message: "false needs network: private: a node on neither a public IPv4 nor the private network has no IPv4 address at all",
      });
    }
    if (natGateway === undefined) {
      problems.push({
        path,
        message:
          "false needs a way out to the IPv4 internet for the join, downloads and the kubelet: set nodefleet:network.natGateway to the " +
          "private IP of your NAT server on the network (nodefleet routes 0.0.0.0/0 through it; docs/networking.md). Public IPv6 alone " +
          "is not one: the k0s releases on github.com have no IPv6 address",
      });
    }
    if (nodeAddress === "public") {
      problems.push({
        path,
        message: "false needs cluster.nodeAddress: private: the node has no public address to register, only its private one",
      });
    }
  }
  return problems;
}
