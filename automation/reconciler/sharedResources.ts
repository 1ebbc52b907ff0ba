/**
 * The shared network and firewall of a batch, looked up by the service through its own counted
 * Hetzner client, once: the program of the guard's preview and of the up would otherwise each
 * look both up (four requests a batch instead of two), and could see different ones.
 */
import type { HcloudClient } from "../hcloud/hcloudClient";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { clusterFirewallName } from "../../components/hcloud/clusterFirewall";
import { clusterNetworkName } from "../../components/hcloud/clusterNetwork";
import type { SharedResources } from "./apiStack";

/** Both by name, or the missing ones named (`network <name>`, `firewall <name>`). */
export async function lookUpSharedResources(
  client: HcloudClient,
  fleet: Pick<FleetSpec, "cluster" | "network">,
): Promise<{ found: SharedResources } | { missing: string[] }> {
  const networkName = clusterNetworkName(fleet.cluster, fleet.network);
  const firewallName = clusterFirewallName(fleet.cluster);
  const [network, firewall] = await Promise.all([client.findNetwork(networkName), client.findFirewall(firewallName)]);
  if (!network || !firewall)
    return { missing: [...(network ? [] : [`network ${networkName}`]), ...(firewall ? [] : [`firewall ${firewallName}`])] };
  const pick = (r: typeof network) => ({ id: r.id, name: r.name, labels: { ...r.labels } });
  return { found: { network: pick(network), firewall: pick(firewall) } };
}
