/**
 * The network, /24 subnet and firewall a test program declares for cluster `cluster`, named and
 * labelled as the fleet names and labels its own (`<cluster>-network`, `<cluster>-nodes`).
 */
import * as hcloud from "@pulumi/hcloud";

export function testClusterNetwork(cluster: string, rules: hcloud.types.input.FirewallRule[]) {
  const labels = { "nodefleet.io/cluster": cluster };
  const network = new hcloud.Network("net", { name: `${cluster}-network`, ipRange: "10.0.0.0/16", labels });
  const subnet = new hcloud.NetworkSubnet("subnet", {
    networkId: network.id.apply(Number),
    type: "cloud",
    networkZone: "eu-central",
    ipRange: "10.0.1.0/24",
  });
  const firewall = new hcloud.Firewall("fw", { name: `${cluster}-nodes`, labels, rules });
  return { labels, network, subnet, firewall };
}
