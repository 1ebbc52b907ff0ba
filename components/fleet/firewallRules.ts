/**
 * Inbound rules of the cluster firewall, the whole public surface of a node whatever its provider:
 * the Hetzner Cloud firewall applies them (it filters public interfaces only, private network
 * traffic is never filtered, and once a firewall has an inbound rule every other inbound packet is
 * dropped), and bare-metal nodes apply the same list on the host (bootstrap/hostFirewall.ts).
 * Outbound traffic stays open (no outbound rules). Rules take CIDRs only, so node-to-node traffic of
 * pools on public addresses is admitted as the CNI's WireGuard port from anywhere (publicNetwork.ts).
 */
import type { ClusterSpec, FirewallSpec } from "./fleetSpec";
import { CNI_WIREGUARD_PORTS } from "./publicNetwork";

const ANYWHERE = ["0.0.0.0/0", "::/0"] as const;
const KUBELET_PORT = "10250";
/** Cilium's WireGuard transparent encryption; packets are authenticated by the peers' keys. */
const CILIUM_WIREGUARD_PORT = "51871";
const NODEPORT_RANGE = "30000-32767";

export interface HcloudFirewallRule {
  readonly direction: "in";
  readonly protocol: "tcp" | "udp" | "icmp" | "esp" | "gre";
  readonly port?: string;
  readonly sourceIps: readonly string[];
  readonly description: string;
}

export function clusterFirewallRules(
  cluster: Pick<ClusterSpec, "controlPlaneAddresses"> & Partial<Pick<ClusterSpec, "cniEncryption">>,
  firewall: FirewallSpec,
): HcloudFirewallRule[] {
  const rules: HcloudFirewallRule[] = [
    {
      direction: "in",
      protocol: "tcp",
      port: KUBELET_PORT,
      sourceIps: [...cluster.controlPlaneAddresses],
      description: "kubelet API from the control plane",
    },
    {
      direction: "in",
      protocol: "udp",
      port: CILIUM_WIREGUARD_PORT,
      sourceIps: [...ANYWHERE],
      description: "Cilium WireGuard between nodes (authenticated by WireGuard keys)",
    },
    { direction: "in", protocol: "icmp", sourceIps: [...ANYWHERE], description: "ICMP (path MTU discovery, ping)" },
  ];
  // Cilium's port is above for every cluster (existing firewalls keep their rules); another CNI's is added when named.
  for (const port of cluster.cniEncryption ? CNI_WIREGUARD_PORTS[cluster.cniEncryption] : []) {
    if (port === CILIUM_WIREGUARD_PORT) continue;
    rules.push({
      direction: "in",
      protocol: "udp",
      port,
      sourceIps: [...ANYWHERE],
      description: `${cluster.cniEncryption} between nodes (authenticated by WireGuard keys)`,
    });
  }
  if (firewall.nodePortSources.length > 0) {
    rules.push({
      direction: "in",
      protocol: "tcp",
      port: NODEPORT_RANGE,
      sourceIps: [...firewall.nodePortSources],
      description: "Kubernetes NodePorts from the configured sources",
    });
  }
  firewall.extraRules.forEach((rule, index) => {
    rules.push({
      direction: "in",
      protocol: rule.protocol,
      ...(rule.port !== undefined ? { port: rule.port } : {}),
      sourceIps: [...rule.sourceIps],
      description: rule.description ?? `extra rule ${index + 1} from nodefleet:firewall`,
    });
  });
  return rules;
}
