/**
 * The cluster's Hetzner Cloud firewall (public interfaces only; see firewallRules.ts). Servers name
 * it in `Server.firewallIds`, so it filters from the first boot: no FirewallAttachment, which would
 * attach it only after the server is up and is limited to one per firewall.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import { clusterFirewallRules } from "../fleet/firewallRules";
import type { ClusterSpec, FirewallSpec } from "../fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";

/** The Hetzner firewall name, `<clusterId>-nodes`; the scaling API's stack looks it up by this name. */
export function clusterFirewallName(cluster: Pick<ClusterSpec, "id">): string {
  return `${cluster.id}-nodes`;
}

export interface ClusterFirewallArgs {
  /** The cluster: its id names and labels the firewall; controlPlaneAddresses may reach the kubelet; cniEncryption's WireGuard port is opened. */
  readonly cluster: Pick<ClusterSpec, "id" | "controlPlaneAddresses"> & Partial<Pick<ClusterSpec, "cniEncryption">>;
  /** NodePort sources (none: NodePorts closed) and extra inbound rules. */
  readonly firewall: FirewallSpec;
}

export class ClusterFirewall extends pulumi.ComponentResource {
  readonly firewall: hcloud.Firewall;
  /** Firewall id as a number, as hcloud's Server.firewallIds takes it. */
  readonly firewallId: pulumi.Output<number>;

  constructor(name: string, args: ClusterFirewallArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:hcloud:ClusterFirewall", name, {}, opts);
    this.firewall = new hcloud.Firewall(
      `${name}-firewall`,
      {
        name: clusterFirewallName(args.cluster),
        labels: { [OWNERSHIP_LABELS.cluster]: args.cluster.id },
        rules: clusterFirewallRules(args.cluster, args.firewall).map((rule) => ({ ...rule, sourceIps: [...rule.sourceIps] })),
      },
      { parent: this },
    );
    this.firewallId = this.firewall.id.apply((id) => Number(id));
    this.registerOutputs({ firewallId: this.firewallId });
  }
}
