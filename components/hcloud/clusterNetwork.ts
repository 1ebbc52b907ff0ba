/**
 * The cluster's Hetzner Cloud private network: one Network and one cloud subnet, labelled with the
 * cluster so that the scaling API's stack (and the orphan reclaimer) can find it by name and label.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSpec, NetworkSpec } from "../fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";

/** The Hetzner network name: `network.name`, else `<clusterId>-network`. */
export function clusterNetworkName(cluster: Pick<ClusterSpec, "id">, network: Pick<NetworkSpec, "name">): string {
  return network.name ?? `${cluster.id}-network`;
}

export interface ClusterNetworkArgs {
  /** The cluster; its id names and labels the network. */
  readonly cluster: Pick<ClusterSpec, "id">;
  /** ipRange (the whole network), subnet (inside ipRange, where servers get addresses), zone, optional name. */
  readonly network: NetworkSpec;
}

export class ClusterNetwork extends pulumi.ComponentResource {
  readonly network: hcloud.Network;
  readonly subnet: hcloud.NetworkSubnet;
  /** Network id as a number, as hcloud's Server.networks[].networkId takes it. */
  readonly networkId: pulumi.Output<number>;
  readonly subnetId: pulumi.Output<string>;

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
    this.registerOutputs({ networkId: this.networkId, subnetId: this.subnetId });
  }
}
