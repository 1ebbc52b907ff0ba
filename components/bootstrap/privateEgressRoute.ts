/**
 * Cloud-init for a Hetzner Cloud node without public IPv4: before the join runs, its default route
 * goes via the private network's gateway (the first address of the network's range), where the
 * network's route 0.0.0.0/0 hands it to the fleet's NAT server (fleet/privateEgress.ts). A systemd
 * unit sets it at every boot, ordered before the kubelet, so the join, its downloads and the
 * kubelet's traffic to a public API server all leave through the NAT gateway. The host firewall and
 * the cluster firewall are untouched: inbound rules still apply as on every node.
 */
import { isIPv4 } from "node:net";
import { parseIpv4Cidr } from "../shared/cidr";

/** What a node without public IPv4 routes through. */
export interface PrivateEgress {
  /** The network's gateway, the next hop of the default route (e.g. 10.0.0.1). */
  readonly gateway: string;
  /** The network's whole range (e.g. 10.0.0.0/16): its route appears once the private interface is up. */
  readonly networkRange: string;
}

export const PRIVATE_EGRESS_SCRIPT_PATH = "/usr/local/sbin/nodefleet-private-egress";
export const PRIVATE_EGRESS_UNIT = "nodefleet-private-egress.service";
const UNIT_PATH = `/etc/systemd/system/${PRIVATE_EGRESS_UNIT}`;
/**
 * Hetzner's recursive resolvers, reachable from every Hetzner server (through the NAT gateway here);
 * a server without public IPv4 gets none from the private interface's DHCP.
 */
const HETZNER_RESOLVERS = ["185.12.64.1", "185.12.64.2"];
const RESOLVED_DROP_IN_PATH = "/etc/systemd/resolved.conf.d/nodefleet-private-egress.conf";

/** Throws, naming the field, unless the gateway is an IPv4 address inside an IPv4 network range. */
function assertPrivateEgress(egress: PrivateEgress): void {
  if (!isIPv4(egress.gateway)) throw new Error(`privateEgress.gateway ${JSON.stringify(egress.gateway)} must be an IPv4 address`);
  if (parseIpv4Cidr(egress.networkRange) === undefined)
    throw new Error(`privateEgress.networkRange ${JSON.stringify(egress.networkRange)} must be an IPv4 CIDR such as 10.0.0.0/16`);
}

/**
 * The script the unit runs: waits (up to `$NODEFLEET_PRIVATE_EGRESS_WAIT_SECONDS`, default 300) for
 * the route to the network, which DHCP installs once the hot-plugged private interface is up, then
 * replaces the default route and points the resolver at Hetzner's.
 */
function renderPrivateEgressScript(egress: PrivateEgress): string {
  assertPrivateEgress(egress);
  return [
    "#!/bin/bash",
    "# Routes this node's internet traffic through the private network's NAT gateway (rendered by nodefleet).",
    "set -euo pipefail",
    `gateway=${egress.gateway}`,
    `network_range=${egress.networkRange}`,
    'wait_seconds="${NODEFLEET_PRIVATE_EGRESS_WAIT_SECONDS:-300}"',
    "waited=0",
    'until ip -4 route show to "$network_range" | grep -q .; do',
    '  if [ "$waited" -ge "$wait_seconds" ]; then',
    '    printf \'nodefleet-private-egress: no route to %s after %ss: the private interface is not up\\n\' "$network_range" "$waited" >&2',
    "    exit 1",
    "  fi",
    "  sleep 2",
    "  waited=$((waited + 2))",
    "done",
    'ip -4 route replace default via "$gateway"',
    `mkdir -p ${RESOLVED_DROP_IN_PATH.slice(0, RESOLVED_DROP_IN_PATH.lastIndexOf("/"))}`,
    `printf '[Resolve]\\nDNS=${HETZNER_RESOLVERS.join(" ")}\\n' > ${RESOLVED_DROP_IN_PATH}`,
    "if systemctl is-active --quiet systemd-resolved; then systemctl restart systemd-resolved; fi",
    "",
  ].join("\n");
}

function renderUnit(): string {
  return [
    "[Unit]",
    "Description=nodefleet: default route through the private network's NAT gateway",
    "Wants=network-online.target",
    "After=network-online.target",
    "Before=k0sworker.service kubelet.service",
    "",
    "[Service]",
    "Type=oneshot",
    "RemainAfterExit=yes",
    `ExecStart=${PRIVATE_EGRESS_SCRIPT_PATH}`,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

/** The cloud-config parts: the files to write, and the commands to run before the join. */
export function privateEgressCloudConfig(egress: PrivateEgress): {
  writeFiles: Array<{ path: string; owner: string; permissions: string; content: string }>;
  runcmd: string[][];
} {
  return {
    writeFiles: [
      { path: PRIVATE_EGRESS_SCRIPT_PATH, owner: "root:root", permissions: "0755", content: renderPrivateEgressScript(egress) },
      { path: UNIT_PATH, owner: "root:root", permissions: "0644", content: renderUnit() },
    ],
    runcmd: [
      ["systemctl", "daemon-reload"],
      ["systemctl", "enable", "--now", PRIVATE_EGRESS_UNIT],
    ],
  };
}
