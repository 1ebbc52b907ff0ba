import type { MemberSnapshot } from "../../automation/store/claimSnapshot";

/** A PENDING claim of cluster "example" as the store tests insert it (3 vCPU, 4 GiB, its placement slot in the snapshot). */
export function newClaim(nodeId: string, pool = "hel1-burst", placementSlot = 0) {
  return {
    clusterId: "example",
    nodeId,
    uniqueId: `u-${nodeId}`,
    requestHash: "h",
    request: { uniqueID: `u-${nodeId}`, pool },
    pool,
    instanceType: "cpx21",
    zone: "hel1",
    snapshot: { serverType: "cpx21", location: "hel1", placementSlot } as unknown as MemberSnapshot,
    status: "PENDING" as const,
    cpuMillis: 3000,
    memoryMiB: 4096,
  };
}
