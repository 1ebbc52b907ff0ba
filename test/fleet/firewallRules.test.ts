import { strict as assert } from "node:assert";
import { clusterFirewallRules } from "../../components/fleet/firewallRules";
import { firewallSchema } from "../../components/fleet/fleetSpec";

const cluster = { controlPlaneAddresses: ["203.0.113.10/32", "198.51.100.0/28"] };

describe("cluster firewall rules", () => {
  it("opens the kubelet to the control plane only, WireGuard and ICMP to everyone, and nothing else by default", () => {
    const rules = clusterFirewallRules(cluster, firewallSchema.parse({}));
    assert.deepEqual(
      rules.map((r) => [r.direction, r.protocol, r.port, r.sourceIps]),
      [
        ["in", "tcp", "10250", ["203.0.113.10/32", "198.51.100.0/28"]],
        ["in", "udp", "51871", ["0.0.0.0/0", "::/0"]],
        ["in", "icmp", undefined, ["0.0.0.0/0", "::/0"]],
      ],
    );
    for (const r of rules) assert.ok(r.description.length > 0);
    assert.ok(!rules.some((r) => r.port === "30000-32767"), "NodePorts stay closed without nodePortSources");
  });

  it("opens NodePorts only to the configured sources", () => {
    const rules = clusterFirewallRules(cluster, firewallSchema.parse({ nodePortSources: ["192.0.2.0/24"] }));
    const nodePorts = rules.filter((r) => r.port === "30000-32767");
    assert.equal(nodePorts.length, 1);
    assert.equal(nodePorts[0].protocol, "tcp");
    assert.deepEqual(nodePorts[0].sourceIps, ["192.0.2.0/24"]);
  });

  it("appends extra rules from config, with a description even when none is given", () => {
    const rules = clusterFirewallRules(
      cluster,
      firewallSchema.parse({
        extraRules: [
          { protocol: "tcp", port: "22", sourceIps: ["192.0.2.10/32"], description: "ssh from the bastion" },
          { protocol: "esp", sourceIps: ["0.0.0.0/0"] },
        ],
      }),
    );
    assert.equal(rules.length, 5);
    assert.deepEqual(rules[3], {
      direction: "in",
      protocol: "tcp",
      port: "22",
      sourceIps: ["192.0.2.10/32"],
      description: "ssh from the bastion",
    });
    assert.equal(rules[4].protocol, "esp");
    assert.equal(rules[4].port, undefined);
    assert.match(rules[4].description, /extra rule 2/);
  });

  it("never opens the kubelet beyond the control plane addresses", () => {
    const rules = clusterFirewallRules(cluster, firewallSchema.parse({ nodePortSources: ["0.0.0.0/0"] }));
    for (const rule of rules.filter((r) => r.port === "10250")) assert.deepEqual(rule.sourceIps, cluster.controlPlaneAddresses);
  });
});
