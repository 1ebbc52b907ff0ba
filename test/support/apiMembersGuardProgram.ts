/**
 * A Pulumi program for the fleet teardown guard's real-engine test: the cluster's network, subnet and
 * firewall with the guard the Fleet declares beside them (static pool `general`). With config
 * `guardtest:teardown` it declares nothing, so the run deletes everything as `pulumi destroy` would
 * (in reverse dependency order).
 */
import * as pulumi from "@pulumi/pulumi";
import { apiMembersGuard } from "../../components/hcloud/apiMembersGuard";
import { testClusterNetwork } from "./testClusterNetwork";

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  if (new pulumi.Config("guardtest").getBoolean("teardown")) return {};
  const { network, subnet, firewall } = testClusterNetwork("g1", [{ direction: "in", protocol: "icmp", sourceIps: ["0.0.0.0/0", "::/0"] }]);
  apiMembersGuard("guard", { cluster: { id: "g1" }, staticPools: ["general"], firewall, network, subnet });
  return { networkId: network.id, firewallId: firewall.id };
}
