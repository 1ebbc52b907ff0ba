/**
 * The address a kubelet registers as its InternalIP (`--node-ip`). Without the flag the kubelet
 * takes the address of the default route's interface, the public one on every provider here, so
 * nodes would talk to each other (and the CNI would tunnel) over the internet. Elastic Metal knows
 * the node's IPAM address before the server exists; a Hetzner Cloud server's private address is
 * assigned at creation, after its user data is fixed, so the node finds its address in the cluster
 * subnet at boot (waiting for the private interface to come up).
 */
import { isIPv4 } from "node:net";
import { numberToIpv4, parseIpv4Cidr } from "../shared/cidr";

/** Either the address itself, or the private subnet the node's address lies in. */
export type NodeIpSource = { readonly address: string } | { readonly subnet: string };

/** Throws, naming the field, unless the source is an IPv4 address or an IPv4 CIDR. */
export function assertNodeIpSource(source: NodeIpSource): void {
  if ("address" in source) {
    if (!isIPv4(source.address)) throw new Error(`nodeIp.address ${JSON.stringify(source.address)} must be an IPv4 address`);
  } else if (parseIpv4Cidr(source.subnet) === undefined) {
    throw new Error(`nodeIp.subnet ${JSON.stringify(source.subnet)} must be an IPv4 CIDR with host bits cleared, such as 10.0.1.0/24`);
  }
}

/**
 * Bash that sets `node_ip` (the kubelet's `--node-ip`). For a subnet it polls `ip -o -4 addr show`
 * every 5 s for a global address inside it, for `$NODEFLEET_NODE_IP_WAIT_SECONDS` (default 300),
 * then prints why and exits 1. Uses nothing but `ip`, `awk`, `sleep` and `printf`, so it fits
 * every script nodefleet renders.
 */
export function renderNodeIpDiscovery(source: NodeIpSource): string {
  assertNodeIpSource(source);
  if ("address" in source) return `node_ip=${source.address}`;
  const cidr = parseIpv4Cidr(source.subnet)!;
  const network = numberToIpv4(cidr.network);
  return `# The kubelet's InternalIP: this node's address in ${source.subnet} (the private network), not the public one.
node_ip=""
node_ip_wait="\${NODEFLEET_NODE_IP_WAIT_SECONDS:-300}"
node_ip_waited=0
while :; do
  node_ip="$(ip -o -4 addr show scope global | awk -v net=${network} -v bits=${cidr.prefix} '
    function num(a,    p) { split(a, p, "."); return ((p[1] * 256 + p[2]) * 256 + p[3]) * 256 + p[4] }
    { split($4, a, "/"); size = 2 ^ (32 - bits); if (int(num(a[1]) / size) == int(num(net) / size)) { print a[1]; exit } }')"
  if [ -n "$node_ip" ]; then break; fi
  if [ "$node_ip_waited" -ge "$node_ip_wait" ]; then
    printf 'nodefleet: no address in the private subnet %s after %ss, so the kubelet has no private --node-ip\\n' ${source.subnet} "$node_ip_waited" >&2
    exit 1
  fi
  sleep 5
  node_ip_waited=$((node_ip_waited + 5))
done`;
}
