/**
 * The shared network and firewall of a batch, looked up by the service through its own counted
 * Hetzner client, once: the program of the guard's preview and of the up would otherwise each
 * look both up (four requests a batch instead of two), and could see different ones.
 */
import type { HcloudClient } from "../engine/hcloudClient";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { clusterFirewallName } from "../../components/hcloud/clusterFirewall";
import { clusterNetworkName } from "../../components/hcloud/clusterNetwork";
import type { SharedResources } from "./apiStack";

/** Both by name, or undefined when one is missing: the program's own look-up then fails with the provider's error. */
export async function lookUpSharedResources(client: HcloudClient, fleet: Pick<FleetSpec, "cluster" | "network">): Promise<SharedResources | undefined> {
  const [network, firewall] = await Promise.all([client.findNetwork(clusterNetworkName(fleet.cluster, fleet.network)), client.findFirewall(clusterFirewallName(fleet.cluster))]);
  if (!network || !firewall) return undefined;
  const pick = (r: typeof network) => ({ id: r.id, name: r.name, labels: { ...r.labels } });
  return { network: pick(network), firewall: pick(firewall) };
}
