/**
 * The node object the API answers with, built from a claim and the current pool template (for
 * drift). Labels are everything the Node will carry (pool, request and well-known labels);
 * restricted request labels appear here even though the kubelet does not set them, because
 * Karpenter applies them itself.
 */
import type { ClusterSpec } from "../../components/fleet/fleetSpec";
import { hcloudRegion } from "../../components/fleet/hcloudLocations";
import { hcloudProviderId, providerIdFor } from "../../components/fleet/naming";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import { formatResources } from "../catalog/instanceTypes";
import { drifts, memberImage, memberTaints } from "../reconciler/memberSnapshot";
import type { PoolTemplate } from "../store/claimSnapshot";
import type { Claim, VisibleStatus } from "../store/claimStore";
import type { NodeView } from "./schemas";

function nodeLabels(
  cluster: Pick<ClusterSpec, "id">,
  claim: Pick<Claim, "nodeId" | "pool" | "snapshot">,
  arch: string | undefined,
): Record<string, string> {
  const s = claim.snapshot;
  return {
    ...s.template.labels,
    ...s.requestLabels,
    "node.kubernetes.io/instance-type": s.serverType,
    "topology.kubernetes.io/zone": s.location,
    "topology.kubernetes.io/region": hcloudRegion(s.location),
    ...(arch !== undefined ? { "kubernetes.io/arch": arch } : {}),
    "kubernetes.io/os": "linux",
    "karpenter.sh/capacity-type": "on-demand",
    [OWNERSHIP_LABELS.cluster]: cluster.id,
    [OWNERSHIP_LABELS.pool]: claim.pool,
    [OWNERSHIP_LABELS.node]: claim.nodeId,
  };
}

/**
 * The providerID the claim's Node registers: `<scheme>:///<cluster>/<node id>`, known at admission,
 * or for a member admitted with `hcloudProviderIds: hcloud` `hcloud://<server id>`, known once the
 * server exists (empty until then; the driver's Create waits for it, docs/hcloud-ccm.md).
 */
export function claimProviderId(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  claim: Pick<Claim, "nodeId" | "snapshot" | "instanceId">,
): string {
  if (claim.snapshot.template.providerIds !== "hcloud") return providerIdFor(cluster, claim.nodeId);
  return claim.instanceId ? hcloudProviderId(claim.instanceId) : "";
}

/** `arch` is the server type's kubernetes.io/arch (undefined only when neither snapshot nor catalog knows it). */
export function nodeView(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme">,
  claim: Claim,
  currentTemplate: PoolTemplate | undefined,
  arch: string | undefined,
): NodeView {
  const drift = drifts(claim.snapshot, currentTemplate);
  const failed = claim.status === "FAILED";
  return {
    nodeID: claim.nodeId,
    providerID: claimProviderId(cluster, claim),
    status: claim.status as VisibleStatus,
    instanceID: claim.instanceId ?? null,
    pool: claim.pool,
    instanceType: claim.instanceType,
    zone: claim.zone,
    ipv4: claim.ipv4 ?? null,
    privateIpv4: claim.privateIpv4 ?? null,
    capacity: formatResources(claim.snapshot.capacity),
    allocatable: formatResources(claim.snapshot.allocatable),
    imageID: memberImage(claim.snapshot.template, claim.snapshot.serverType) ?? claim.snapshot.template.image,
    labels: nodeLabels(cluster, claim, arch),
    taints: memberTaints(claim.snapshot),
    createdAt: claim.createdAt,
    updatedAt: claim.updatedAt,
    ...(failed && claim.failureCode !== undefined ? { failureCode: claim.failureCode } : {}),
    ...(failed && claim.failureReason !== undefined ? { failureReason: claim.failureReason } : {}),
    drifted: drift.length > 0,
    ...(drift.length > 0 ? { driftReason: drift.map((d) => d.reason).join(","), driftDetails: drift.map((d) => d.detail).join("; ") } : {}),
  };
}
