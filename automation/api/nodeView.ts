/**
 * The node object the API answers with, built from a claim and the current pool template (for
 * drift). Labels are everything the Node will carry (pool, request and well-known labels);
 * restricted request labels appear here even though the kubelet does not set them, because
 * Karpenter applies them itself.
 */
import type { ClusterSpec } from "../../components/fleet/fleetSpec";
import { providerIdFor } from "../../components/fleet/naming";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import { formatResources } from "../catalog/instanceTypes";
import { driftReasons, type PoolTemplate } from "../reconciler/memberSnapshot";
import type { Claim, VisibleStatus } from "../store/claimStore";
import type { NodeView } from "./schemas";

export function nodeLabels(cluster: Pick<ClusterSpec, "id">, claim: Pick<Claim, "nodeId" | "pool" | "snapshot">): Record<string, string> {
  const s = claim.snapshot;
  return {
    ...s.template.labels,
    ...s.requestLabels,
    "node.kubernetes.io/instance-type": s.serverType,
    "topology.kubernetes.io/zone": s.location,
    "karpenter.sh/capacity-type": "on-demand",
    [OWNERSHIP_LABELS.cluster]: cluster.id,
    [OWNERSHIP_LABELS.pool]: claim.pool,
    [OWNERSHIP_LABELS.node]: claim.nodeId,
  };
}

export function nodeView(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  claim: Claim,
  currentTemplate: PoolTemplate | undefined,
): NodeView {
  const reasons = driftReasons(claim.snapshot, currentTemplate);
  return {
    nodeID: claim.nodeId,
    providerID: providerIdFor(cluster, claim.nodeId),
    status: claim.status as VisibleStatus,
    instanceID: claim.instanceId ?? null,
    pool: claim.pool,
    instanceType: claim.instanceType,
    zone: claim.zone,
    ipv4: claim.ipv4 ?? null,
    privateIpv4: claim.privateIpv4 ?? null,
    capacity: formatResources(claim.snapshot.capacity),
    allocatable: formatResources(claim.snapshot.allocatable),
    labels: nodeLabels(cluster, claim),
    taints: [...claim.snapshot.template.taints, ...claim.snapshot.requestTaints],
    createdAt: claim.createdAt,
    updatedAt: claim.updatedAt,
    ...(claim.failureReason !== undefined && claim.status === "FAILED" ? { failureReason: claim.failureReason } : {}),
    drifted: reasons.length > 0,
    ...(reasons.length > 0 ? { driftReason: reasons.join("; ") } : {}),
  };
}
