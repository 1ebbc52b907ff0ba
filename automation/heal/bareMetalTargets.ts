/**
 * The git stack's bare-metal members the healer may remediate, by Node name: each Robot server
 * (reset through the Robot webservice) and each Elastic Metal member (rebooted through Scaleway's
 * API, found by its server name, which is the member's hostname).
 */
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { robotMembers } from "../../components/robot/robotPlan";
import { elasticMetalMembers } from "../../components/scaleway/elasticMetalPlan";

export type BareMetalTarget =
  | { readonly kind: "hetzner-robot"; readonly nodeName: string; readonly pool: string; readonly serverNumber: number }
  | { readonly kind: "scaleway-elastic-metal"; readonly nodeName: string; readonly pool: string; readonly zone: string };

export function bareMetalTargets(fleet: FleetSpec): BareMetalTarget[] {
  const targets: BareMetalTarget[] = [];
  for (const pool of fleet.pools) {
    if (pool.provider === "hetzner-robot") {
      for (const { member, serverNumber } of robotMembers(fleet.cluster, pool)) {
        targets.push({ kind: "hetzner-robot", nodeName: member.hostname, pool: pool.name, serverNumber });
      }
    } else if (pool.provider === "scaleway-elastic-metal") {
      for (const member of elasticMetalMembers(fleet.cluster, pool)) {
        targets.push({ kind: "scaleway-elastic-metal", nodeName: member.hostname, pool: pool.name, zone: pool.zone });
      }
    }
  }
  return targets;
}
