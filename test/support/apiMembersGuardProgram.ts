/**
 * A Pulumi program for the fleet teardown guard's real-engine test: the cluster's network, subnet and
 * firewall with the guard the Fleet declares beside them (static pool `general`). With config
 * `guardtest:teardown` it declares nothing, so the run deletes everything as `pulumi destroy` would
 * (in reverse dependency order).
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import { apiMembersGuard } from "../../components/hcloud/apiMembersGuard";

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  if (new pulumi.Config("guardtest").getBoolean("teardown")) return {};
  const labels = { "nodefleet.io/cluster": "g1" };
  const network = new hcloud.Network("net", { name: "g1-network", ipRange: "10.0.0.0/16", labels });
  const subnet = new hcloud.NetworkSubnet("subnet", {
    networkId: network.id.apply(Number),
    type: "cloud",
    networkZone: "eu-central",
    ipRange: "10.0.1.0/24",
  });
  const firewall = new hcloud.Firewall("fw", {
    name: "g1-nodes",
    labels,
    rules: [{ direction: "in", protocol: "icmp", sourceIps: ["0.0.0.0/0", "::/0"] }],
  });
  apiMembersGuard("guard", { cluster: { id: "g1" }, staticPools: ["general"], firewall, network, subnet });
  return { networkId: network.id, firewallId: firewall.id };
}
