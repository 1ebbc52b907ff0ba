/**
 * A Pulumi program for the hcloud provider plugin's real-engine test: one of each resource the fleet
 * declares (network, subnet, firewall, placement group, server) and the two look-ups the API stack
 * makes, shaped by config `hcloudtest:revision` so successive runs update in place or replace
 * (`hcloudtest:serverType` overrides the servers' type).
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import { testClusterNetwork } from "./testClusterNetwork";

/** Server `i`'s user data at a generation (exported: the test checks what the state keeps of it). */
export const serverUserData = (i: number, generation: number) => `#cloud-config\nhostname: t1-server-${i}\nruncmd: [echo g${generation}]\n`;

export function runProgram(): Record<string, pulumi.Output<unknown>> {
  const config = new pulumi.Config("hcloudtest");
  const revision = config.requireNumber("revision");
  const servers = config.getNumber("servers") ?? 1;
  const { labels, network, subnet, firewall } = testClusterNetwork("t1", [
    { direction: "in", protocol: "icmp", sourceIps: ["0.0.0.0/0", "::/0"] },
    {
      direction: "in",
      protocol: "tcp",
      port: "10250",
      sourceIps: revision >= 2 ? ["203.0.113.10/32", "203.0.113.11/32"] : ["203.0.113.10/32"],
    },
  ]);
  const group = new hcloud.PlacementGroup("pg", { name: "t1-pg-0", type: "spread", labels });
  const created: hcloud.Server[] = [];
  // Revision 3 changes the user data, which replaces the server. Its name, given explicitly, makes
  // upstream delete the old server first (the bridge's autonaming rule); the fleet instead puts the
  // generation in the resource name too, so a new generation is a new resource created beside the old.
  const generation = revision >= 3 ? 3 : 1;
  for (let i = 0; i < servers; i++) {
    created.push(
      new hcloud.Server(
        `server-${i}`,
        {
          name: `t1-server-${i}-g${generation}`,
          serverType: config.get("serverType") ?? (revision >= 2 ? "cpx31" : "cpx21"),
          image: "ubuntu-24.04",
          location: "hel1",
          userData: pulumi.secret(serverUserData(i, generation)),
          labels: { ...labels, revision: String(revision) },
          firewallIds: [firewall.id.apply(Number)],
          placementGroupId: group.id.apply(Number),
          networks: [{ networkId: network.id.apply(Number), aliasIps: [] }],
          publicNets: [{ ipv4Enabled: true, ipv6Enabled: true }],
          deleteProtection: revision === 2,
          rebuildProtection: revision === 2,
        },
        { dependsOn: [subnet] },
      ),
    );
  }
  const selector = "nodefleet.io/cluster=t1";
  const found = pulumi.all([network.id, firewall.id]).apply(async () => ({
    network: await hcloud.getNetwork({ name: "t1-network", withSelector: selector }),
    firewall: await hcloud.getFirewall({ name: "t1-nodes", withSelector: selector }),
  }));
  return {
    serverIds: pulumi.all(created.map((s) => s.id)),
    ipv4: pulumi.all(created.map((s) => s.ipv4Address)),
    userDataStates: pulumi.all(created.map((s) => s.userData)),
    privateIps: pulumi.all(created.map((s) => s.networks.apply((n) => n?.[0]?.ip))),
    gateway: subnet.gateway,
    lookedUpNetworkId: found.apply((f) => f.network.id),
    lookedUpFirewallRules: found.apply((f) => f.firewall.rules?.length),
  };
}
