/**
 * The host firewall of bare-metal nodes (Elastic Metal, Robot), which have no provider firewall: the
 * cluster firewall's public rules (fleet/firewallRules.ts) as an nftables ruleset, plus SSH for
 * nodefleet's own commands. It filters only the public NIC (private networks, loopback and the CNI's
 * interfaces pass) and hooks `prerouting` at the mangle priority, before kube-proxy's DNAT, so
 * NodePorts are filtered like any other port; conntrack passes replies, and DHCP replies and ICMPv6
 * are allowed. Its limits: docs/operations.md (Host firewall on bare metal).
 */
import type { HcloudFirewallRule } from "../fleet/firewallRules";
import { APT_GET, scriptPrelude } from "./shellScript";

export const HOST_FIREWALL_PATH = "/etc/nodefleet/firewall.nft";
export const HOST_FIREWALL_UNIT = "nodefleet-firewall.service";
export const HOST_FIREWALL_UNIT_PATH = `/etc/systemd/system/${HOST_FIREWALL_UNIT}`;

const SHELL_EXPRESSION = /^\$\{[a-z_][a-z0-9_]*\}$/;
const INTERFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

export interface HostFirewallInput {
  /** The cluster firewall's inbound rules (clusterFirewallRules). */
  readonly rules: readonly HcloudFirewallRule[];
  /** The public NIC: an interface name, or a shell expression such as `${public_nic}`. */
  readonly publicInterface: string;
  /** The SSH port nodefleet's remote commands use (re-push, re-join). Default 22. */
  readonly sshPort?: number;
}

/** nft comments: at most 128 characters, and nothing the shell or nft would read as syntax. */
function comment(text: string): string {
  return `comment "${text.replace(/[^A-Za-z0-9 ,.()/:_+-]/g, " ").slice(0, 120)}"`;
}

function sourceMatches(sourceIps: readonly string[]): string[] {
  const v4 = sourceIps.filter((s) => !s.includes(":"));
  const v6 = sourceIps.filter((s) => s.includes(":"));
  return [...(v4.length > 0 ? [`ip saddr { ${v4.join(", ")} }`] : []), ...(v6.length > 0 ? [`ip6 saddr { ${v6.join(", ")} }`] : [])];
}

function protocolMatch(rule: HcloudFirewallRule): string {
  switch (rule.protocol) {
    case "tcp":
    case "udp":
      return rule.port === undefined || rule.port === "any" ? `meta l4proto ${rule.protocol}` : `${rule.protocol} dport ${rule.port}`;
    case "icmp":
      return "meta l4proto { icmp, ipv6-icmp }";
    case "esp":
    case "gre":
      return `meta l4proto ${rule.protocol}`;
  }
}

/** The nftables ruleset; loading it replaces nodefleet's table and nothing else. */
export function renderHostFirewall(input: HostFirewallInput): string {
  if (!INTERFACE_NAME.test(input.publicInterface) && !SHELL_EXPRESSION.test(input.publicInterface)) {
    throw new Error(`public interface ${JSON.stringify(input.publicInterface)} is neither an interface name nor a shell variable`);
  }
  const sshPort = input.sshPort ?? 22;
  if (!Number.isInteger(sshPort) || sshPort < 1 || sshPort > 65535) throw new Error(`sshPort ${sshPort} must be a port from 1 to 65535`);
  const ruleLines = input.rules.flatMap((rule) =>
    sourceMatches(rule.sourceIps).map((source) => `    ${source} ${protocolMatch(rule)} accept ${comment(rule.description)}`),
  );
  return `#!/usr/sbin/nft -f
# nodefleet host firewall: the cluster firewall's public rules on the public NIC (rendered; do not edit).
table inet nodefleet
delete table inet nodefleet
table inet nodefleet {
  chain public_ingress {
    type filter hook prerouting priority mangle; policy accept;
    iifname != "${input.publicInterface}" accept
    ct state established,related accept
    ct state invalid drop
    udp sport 67 udp dport 68 accept ${comment("DHCPv4 replies")}
    udp sport 547 udp dport 546 accept ${comment("DHCPv6 replies")}
    meta l4proto ipv6-icmp accept ${comment("IPv6 neighbour discovery and router advertisements")}
    tcp dport ${sshPort} accept ${comment("SSH for nodefleet remote commands (keys only)")}
${ruleLines.join("\n")}
    counter drop ${comment("everything else on the public NIC")}
  }
}
`;
}

/**
 * Bash for the self-join (after shellScript.ts's prelude): installs nftables when missing, writes
 * the ruleset for the NIC holding the default route and a oneshot unit that loads it on every boot
 * before the kubelet, and loads it now when it changed.
 */
export function renderHostFirewallSection(input: Omit<HostFirewallInput, "publicInterface">): string {
  const ruleset = renderHostFirewall({ ...input, publicInterface: "${public_nic}" });
  // The heredoc expands ${public_nic} only: the ruleset has no other `$`, backquote or backslash.
  if (/[`\\]|\$(?!\{public_nic\})/.test(ruleset)) throw new Error("the host firewall ruleset has characters the shell would expand");
  return `# --- host firewall: the cluster firewall's public rules on the public NIC, before the kubelet starts
public_nic="$(ip -o -4 route show default | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')"
if [ -z "$public_nic" ]; then
  log "no default route: cannot tell the public NIC for the host firewall"
  exit 1
fi
if ! command -v nft >/dev/null 2>&1; then
  ${APT_GET} update -q
  ${APT_GET} install -y -q nftables
fi
before=$CHANGED
write_file ${HOST_FIREWALL_PATH} 0600 <<NODEFLEET_NFT
${ruleset}NODEFLEET_NFT
write_file ${HOST_FIREWALL_UNIT_PATH} 0644 <<'NODEFLEET_UNIT'
[Unit]
Description=nodefleet host firewall (public ingress)
DefaultDependencies=no
Wants=network-pre.target
Before=network-pre.target kubelet.service k0sworker.service shutdown.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/sbin/nft -f ${HOST_FIREWALL_PATH}

[Install]
WantedBy=sysinit.target
NODEFLEET_UNIT
systemctl daemon-reload
systemctl enable ${HOST_FIREWALL_UNIT} >/dev/null 2>&1
if [ "$CHANGED" -gt "$before" ] || ! systemctl is-active --quiet ${HOST_FIREWALL_UNIT}; then
  systemctl restart ${HOST_FIREWALL_UNIT}
fi`;
}

/**
 * The host firewall alone, for a running node whose cluster firewall changed: the section above
 * after the prelude. It writes the ruleset and reloads it only when it changed; loading replaces
 * nodefleet's table in one nft transaction (the file deletes and re-adds it), so there is no moment
 * without rules, conntrack keeps established connections, and the kubelet, k0s and kube-proxy's
 * own tables are left alone.
 */
export function renderHostFirewallReload(input: Omit<HostFirewallInput, "publicInterface">): string {
  return `${scriptPrelude("reload the host firewall")}\n${renderHostFirewallSection(input)}\n`;
}
