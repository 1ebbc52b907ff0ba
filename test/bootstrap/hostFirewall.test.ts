import { strict as assert } from "node:assert";
import { firewallSchema } from "../../components/fleet/fleetSpec";
import { clusterFirewallRules } from "../../components/fleet/firewallRules";
import {
  HOST_FIREWALL_PATH,
  HOST_FIREWALL_UNIT,
  HOST_FIREWALL_UNIT_PATH,
  renderHostFirewall,
  renderHostFirewallReload,
} from "../../components/bootstrap/hostFirewall";
import { renderSelfJoinScript } from "../../components/bootstrap/selfJoinScript";
import { assertNftRulesetValid, assertShellcheckClean } from "../support/externalLinters";
import { FakeNode } from "../support/nodeShims";
import { k0sSelfJoinInput } from "../support/selfJoinInput";

const CLUSTER = { controlPlaneAddresses: ["203.0.113.10/32", "198.51.100.0/24"] };
const FIREWALL = firewallSchema.parse({
  nodePortSources: ["192.0.2.0/24", "2001:db8::/32"],
  extraRules: [
    { protocol: "tcp", port: "any", sourceIps: ["192.0.2.7/32"], description: 'metrics "scraper"; rm -rf $HOME `id`' },
    { protocol: "udp", port: "4789", sourceIps: ["0.0.0.0/0", "::/0"] },
    { protocol: "esp", sourceIps: ["198.51.100.0/24"] },
    { protocol: "gre", sourceIps: ["2001:db8:1::/48"] },
  ],
});
const RULES = clusterFirewallRules(CLUSTER, FIREWALL);

function k0sJoin(hostFirewall = { rules: RULES, sshPort: 22 }): string {
  return renderSelfJoinScript(
    k0sSelfJoinInput({ hostname: "example-fsn-metal-a", providerID: "nodefleet:///example/fsn-metal-a", hostFirewall }),
  );
}

describe("host firewall (bare metal)", () => {
  it("passes the real `nft -c` for the default rules and for every kind of extra rule", () => {
    assertNftRulesetValid(renderHostFirewall({ rules: clusterFirewallRules(CLUSTER, firewallSchema.parse({})), publicInterface: "eno1" }));
    assertNftRulesetValid(renderHostFirewall({ rules: RULES, publicInterface: "enp129s0f0np0", sshPort: 2222 }));
  });

  it("carries the same public rules as the Hetzner Cloud firewall, on the public NIC only, and drops the rest", () => {
    const text = renderHostFirewall({ rules: RULES, publicInterface: "eno1" });
    assert.match(
      text,
      /type filter hook prerouting priority mangle; policy accept;/,
      "before kube-proxy's DNAT, so NodePorts are filtered too",
    );
    assert.match(text, /^ {4}iifname != "eno1" accept$/m);
    assert.match(text, /ip saddr \{ 203\.0\.113\.10\/32, 198\.51\.100\.0\/24 \} tcp dport 10250 accept/);
    assert.match(text, /ip saddr \{ 0\.0\.0\.0\/0 \} udp dport 51871 accept/);
    assert.match(text, /ip6 saddr \{ ::\/0 \} meta l4proto \{ icmp, ipv6-icmp \} accept/);
    assert.match(text, /ip saddr \{ 192\.0\.2\.0\/24 \} tcp dport 30000-32767 accept/);
    assert.match(text, /ip6 saddr \{ 2001:db8::\/32 \} tcp dport 30000-32767 accept/);
    assert.match(text, /tcp dport 22 accept/, "nodefleet's own SSH stays reachable");
    assert.match(text, /counter drop comment "everything else on the public NIC"\n {2}\}\n\}\n$/);
    for (const rule of RULES)
      assert.ok(text.includes(rule.description.replace(/[^A-Za-z0-9 ,.()/:_+-]/g, " ").slice(0, 120)), rule.description);
    assert.doesNotMatch(text, /[`$\\]/, "descriptions cannot inject shell syntax");
    assert.match(text, /comment "metrics {2}scraper {3}rm -rf {2}HOME {2}id "$/m, "nor nft syntax (quotes, semicolons)");
    assert.throws(() => renderHostFirewall({ rules: RULES, publicInterface: "eno1; flush ruleset" }), /neither an interface name/);
  });

  it("the self-join loads it before the kubelet, for the public NIC it finds, and leaves it alone on a re-run", () => {
    const script = k0sJoin();
    assertShellcheckClean(script);
    const node = new FakeNode();
    try {
      const run = node.run(script);
      assert.equal(run.status, 0, run.stderr);
      const written = node.read(HOST_FIREWALL_PATH);
      assert.match(written, /iifname != "eno1" accept/, "the NIC of the default route");
      assertNftRulesetValid(written);
      assert.match(node.read(HOST_FIREWALL_UNIT_PATH), /^Before=network-pre\.target kubelet\.service k0sworker\.service/m);
      const load = run.calls.indexOf(`systemctl restart ${HOST_FIREWALL_UNIT}`);
      const start = run.calls.findIndex((c) => c === "k0s start");
      assert.ok(load >= 0 && start > load, `the firewall must be up before k0s starts the kubelet:\n${run.calls.join("\n")}`);
      const again = node.run(script);
      assert.equal(again.status, 0, again.stderr);
      assert.equal(again.calls.filter((c) => c.startsWith(`systemctl restart ${HOST_FIREWALL_UNIT}`)).length, 0);
    } finally {
      node.dispose();
    }
  });

  it("the host-firewall command reloads changed rules on a joined node and restarts nothing else", () => {
    const node = new FakeNode();
    try {
      assert.equal(node.run(k0sJoin()).status, 0);
      const same = renderHostFirewallReload({ rules: RULES, sshPort: 22 });
      assertShellcheckClean(same);
      const unchanged = node.run(same);
      assert.equal(unchanged.status, 0, unchanged.stderr);
      assert.deepEqual(
        unchanged.calls.filter((c) => c.includes("restart")),
        [],
        "the rules it already runs: no reload",
      );
      const opened = [...RULES, { ...RULES[0]!, port: "8443", description: "a new rule" }];
      const changed = node.run(renderHostFirewallReload({ rules: opened, sshPort: 22 }));
      assert.equal(changed.status, 0, changed.stderr);
      assert.deepEqual(
        changed.calls.filter((c) => /restart|k0s|kubelet/.test(c)),
        [`systemctl restart ${HOST_FIREWALL_UNIT}`],
        changed.calls.join("\n"),
      );
      assert.match(node.read(HOST_FIREWALL_PATH), /tcp dport 8443 accept comment "a new rule"/);
      assertNftRulesetValid(node.read(HOST_FIREWALL_PATH));
    } finally {
      node.dispose();
    }
  });
});
