/**
 * The program of the scaling API's own stack (one per cluster, in the API's workDir). It declares
 * only the autoscaled members, each rendered from the snapshot frozen when its claim was admitted,
 * and finds the shared network and firewall by name and cluster label instead of declaring them:
 * git owns those, and a `pulumi up` from git never sees (so never deletes) API-created nodes.
 */
import * as hcloud from "@pulumi/hcloud";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { AutoscaledProgramArgs } from "../automation/reconciler/apiStack";
import { memberOutputName } from "../automation/reconciler/runOutcome";
import { memberImage, memberProviderId, memberTaints } from "../automation/reconciler/memberSnapshot";
import type { MemberSnapshot } from "../automation/store/claimSnapshot";
import { clusterFirewallName } from "../components/hcloud/clusterFirewall";
import { clusterNetworkName } from "../components/hcloud/clusterNetwork";
import { FleetSpecError, parseFleetSpec, type ClusterSpec, type Taint } from "../components/fleet/fleetSpec";
import { HcloudNodePool } from "../components/hcloud/hcloudNodePool";
import { clusterKubeconfig } from "../components/fleet/clusterKubeconfig";
import type { HcloudPoolMember, HcloudPoolTemplate } from "../components/hcloud/hcloudServerPlan";
import { OWNERSHIP_LABELS, nodeMember } from "../components/fleet/nodeMember";
import { recordedMemberResources } from "../components/fleet/memberResources";
import { readRawFleetConfig } from "./fleetProgram";
import { withoutSourcePositions } from "../components/shared/withoutSourcePositions";

/** Karpenter removes it once it has matched the Node to its NodeClaim. */
export const UNREGISTERED_TAINT: Taint = { key: "karpenter.sh/unregistered", effect: "NoExecute" };

/** A member exactly as its snapshot describes it (nothing from the current pool template). */
export function autoscaledMember(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  nodeId: string,
  snapshot: MemberSnapshot,
): HcloudPoolMember {
  const t = snapshot.template;
  return {
    ...nodeMember(
      cluster,
      {
        pool: t.pool,
        serverType: snapshot.serverType,
        location: snapshot.location,
        labels: { ...t.labels, ...snapshot.kubeletLabels },
        taints: memberTaints(snapshot),
      },
      nodeId,
    ),
    providerID: memberProviderId(cluster, nodeId, t),
    // Its architecture's resolved image for a pool with imageSelector (admission admits none without one).
    image: memberImage(t, snapshot.serverType) ?? t.image,
    sshKeys: t.sshKeys,
    network: t.network ?? "private",
    placement: t.placement ?? "spread",
    publicIpv4: t.publicIpv4 ?? true,
    publicIpv6: t.publicIpv6 ?? true,
    placementSlot: snapshot.placementSlot,
    extraTaints: [UNREGISTERED_TAINT],
    bootstrapTokenSecret: snapshot.bootstrapTokenSecret ?? "random-string",
    memberResources: recordedMemberResources(snapshot.memberResources),
    bootstrap: {
      kubelet: t.kubelet,
      ...(t.k0sVersion !== undefined ? { k0sVersion: t.k0sVersion } : {}),
      ...(t.kubernetesVersion !== undefined ? { kubernetesVersion: t.kubernetesVersion } : {}),
    },
  };
}

/**
 * Members grouped by pool, in a stable order (by node id), with the pool-level settings of the
 * newest snapshot. Each member keeps the network it was admitted with (`network` on the member), so
 * a pool moved between private and public holds both kinds while its older members live.
 */
export function membersByPool(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  members: AutoscaledProgramArgs["members"],
): Array<{ pool: HcloudPoolTemplate; members: HcloudPoolMember[] }> {
  const pools = new Map<string, { pool: HcloudPoolTemplate; members: HcloudPoolMember[] }>();
  for (const m of [...members].sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1))) {
    const t = m.snapshot.template;
    const entry = pools.get(m.pool) ?? {
      pool: { name: t.pool, image: t.image, sshKeys: [], deleteProtection: t.deleteProtection },
      members: [],
    };
    entry.members.push(autoscaledMember(cluster, m.nodeId, m.snapshot));
    pools.set(m.pool, entry);
    // Spread groups per location once any member was admitted to a spread pool over several locations.
    if (t.locations !== undefined) {
      const locations = entry.pool.locations ?? [t.location];
      entry.pool = { ...entry.pool, location: locations[0], locations: [...new Set([...locations, ...t.locations, m.snapshot.location])] };
    }
  }
  return [...pools.values()];
}

/**
 * A looked-up network or firewall must carry this cluster's ownership label: a same-named one from
 * another cluster (or made by hand) is refused instead of having servers attached to it.
 */
export function assertClusterOwned(
  kind: "network" | "firewall",
  name: string | undefined,
  labels: Readonly<Record<string, string>> | undefined,
  clusterId: string,
): void {
  const owner = labels?.[OWNERSHIP_LABELS.cluster];
  if (owner !== clusterId) {
    throw new Error(
      `the Hetzner ${kind} ${name ?? "(unnamed)"} is not labelled ${OWNERSHIP_LABELS.cluster}=${clusterId} (${owner === undefined ? "no such label" : `it belongs to ${owner}`}); autoscaled nodes attach only to the ${kind} git's stack declared for this cluster`,
    );
  }
}

export async function runProgram(args: AutoscaledProgramArgs): Promise<Record<string, unknown>> {
  const spec = parseFleetSpec(readRawFleetConfig());
  const { kubeconfig: stackKubeconfig, ...cluster } = spec.cluster;
  // From the environment only when members need it: a run that removes the last members mints nothing.
  const kubeconfig =
    args.members.length > 0 ? clusterKubeconfig(spec.cluster, { optional: args.allowMissingKubeconfig === true }) : stackKubeconfig;
  if (kubeconfig === undefined && !args.allowMissingKubeconfig && args.members.length > 0) {
    throw new FleetSpecError(["nodefleet:cluster.kubeconfig: is required to mint bootstrap tokens for autoscaled nodes"]);
  }
  if (cluster.id !== args.clusterId) throw new Error(`stack config is for cluster ${cluster.id}, the claims are for ${args.clusterId}`);
  const groups = membersByPool(cluster, args.members);
  const outputs: Record<string, pulumi.Output<unknown>> = {};
  if (groups.length > 0) {
    // Look-ups, not resources: git's stack owns the network and firewall. By name (the provider
    // ignores with_selector when a name is given; the service's batch look-up when it made one),
    // then the ownership label is checked here.
    const network = args.shared?.network ?? (await hcloud.getNetwork({ name: clusterNetworkName(cluster, spec.network) }));
    assertClusterOwned("network", network.name, network.labels, cluster.id);
    const firewall = args.shared?.firewall ?? (await hcloud.getFirewall({ name: clusterFirewallName(cluster) }));
    assertClusterOwned("firewall", firewall.name, firewall.labels, cluster.id);
    const kubernetes = new k8s.Provider(`${cluster.id}-api-kubernetes`, {
      kubeconfig: kubeconfig === undefined ? "" : pulumi.secret(kubeconfig),
    });
    for (const group of groups) {
      const pool = withoutSourcePositions(
        () =>
          new HcloudNodePool(
            `${cluster.id}-${group.pool.name}`,
            {
              cluster,
              pool: group.pool,
              members: group.members,
              networkId: Number(network.id),
              firewallIds: [Number(firewall.id)],
              // Admission held the members on the network to Hetzner's 100; one the rollout left out would be deleted.
              networkLimit: false,
              // Only members without public IPv4 render it (their route to the NAT gateway); git's stack refuses a changed range.
              privateNetworkRange: spec.network.ipRange,
              ...(kubeconfig !== undefined ? { kubeconfig: pulumi.secret(kubeconfig) } : {}),
            },
            { providers: [kubernetes] },
          ),
      );
      for (const node of pool.nodes) {
        outputs[memberOutputName(node.nodeId)] = pulumi
          .all([node.serverId, node.ipv4, node.privateIpv4])
          .apply(([serverId, ipv4, privateIpv4]) => ({
            serverId,
            ipv4,
            ...(privateIpv4 !== undefined ? { privateIpv4 } : {}),
          }));
      }
    }
  }
  return { clusterId: cluster.id, ...outputs };
}
