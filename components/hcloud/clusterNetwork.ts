/**
 * The cluster's Hetzner Cloud private network: one Network and one cloud subnet, labelled with the
 * cluster so that the scaling API's stack (and the orphan reclaimer) can find it by name and label.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, NetworkSpec } from "../fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";
import { DEFAULT_ROUTE_DESTINATION } from "../fleet/privateEgress";

/** The Hetzner network name: `network.name`, else `<clusterId>-network`. */
export function clusterNetworkName(cluster: Pick<ClusterSpec, "id">, network: Pick<NetworkSpec, "name">): string {
  return network.name ?? `${cluster.id}-network`;
}

/** What a run records of the network for the next one: its range. */
export function networkOutput(spec: { readonly network: Pick<NetworkSpec, "ipRange"> }): { ipRange: string } {
  return { ipRange: spec.network.ipRange };
}

/**
 * Why the network's range cannot change, if it changed since the previous run. Hetzner's provider
 * replaces a network to change its range (ip_range is ForceNew): the new one under the same name
 * collides with the old, and the old one's deletion detaches every server from the private network
 * and re-addresses it under running kubelets. Refused before anything is declared.
 */
export function networkRangeChangeProblem(spec: { readonly network: Pick<NetworkSpec, "ipRange"> }, previous: unknown): string | undefined {
  const before = (previous as { ipRange?: unknown } | undefined)?.ipRange;
  if (typeof before !== "string" || before === spec.network.ipRange) return undefined;
  return (
    `nodefleet:network.ipRange: cannot change on an existing network (${before} -> ${spec.network.ipRange}): ` +
    "Hetzner replaces a network to change its range, which detaches every server from it and changes its private address; " +
    `keep ${before}, or move the nodes to a new cluster with its own network`
  );
}

export interface ClusterNetworkArgs {
  /** The cluster; its id names and labels the network. */
  readonly cluster: Pick<ClusterSpec, "id">;
  /**
   * ipRange (the whole network), subnet (inside ipRange, where servers get addresses), zone, optional
   * name, and optional natGateway (the network then routes 0.0.0.0/0 to it).
   */
  readonly network: NetworkSpec;
}

export class ClusterNetwork extends pulumi.ComponentResource {
  readonly network: hcloud.Network;
  readonly subnet: hcloud.NetworkSubnet;
  /** Network id as a number, as hcloud's Server.networks[].networkId takes it. */
  readonly networkId: pulumi.Output<number>;
  readonly subnetId: pulumi.Output<string>;
  /** The route 0.0.0.0/0 via `network.natGateway`, when one is named. */
  readonly natRoute: hcloud.NetworkRoute | undefined;

  constructor(name: string, args: ClusterNetworkArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:hcloud:ClusterNetwork", name, {}, opts);
    this.network = new hcloud.Network(
      `${name}-network`,
      {
        name: clusterNetworkName(args.cluster, args.network),
        ipRange: args.network.ipRange,
        labels: { [OWNERSHIP_LABELS.cluster]: args.cluster.id },
      },
      { parent: this },
    );
    this.networkId = this.network.id.apply((id) => Number(id));
    this.subnet = new hcloud.NetworkSubnet(
      `${name}-subnet`,
      { networkId: this.networkId, type: "cloud", networkZone: args.network.zone, ipRange: args.network.subnet },
      { parent: this },
    );
    this.subnetId = this.subnet.id;
    // Hetzner's pattern for servers without a public IPv4: the network hands everything not local to
    // a NAT server (docs.hetzner.com/cloud/networks/connect-dedi-vswitch routes a network the same way).
    this.natRoute =
      args.network.natGateway === undefined
        ? undefined
        : new hcloud.NetworkRoute(
            `${name}-nat-route`,
            { networkId: this.networkId, destination: DEFAULT_ROUTE_DESTINATION, gateway: args.network.natGateway },
            { parent: this },
          );
    this.registerOutputs({ networkId: this.networkId, subnetId: this.subnetId });
  }
}
