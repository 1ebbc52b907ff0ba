/**
 * Frozen members. A claim keeps the pool template it was admitted with, and its member is always
 * rendered from that snapshot: changing a pool template in git never replaces a running node.
 * Drift is the snapshot's hash differing from the current template's (projected onto what matters
 * for this member), reported with the differing fields so Karpenter can replace the node gracefully.
 */
import { canonicalHash, canonicalJson } from "../../components/shared/canonicalJson";
import type { ClusterSpec, HcloudAutoscaledPool, KubeletSettings, Taint } from "../../components/fleet/fleetSpec";
import type { NodeResources } from "../catalog/instanceTypes";

/** Everything of a pool and its cluster that shapes a member's server and bootstrap. */
export interface PoolTemplate {
  readonly pool: string;
  readonly location: string;
  readonly serverTypes: readonly string[];
  readonly image: string;
  readonly sshKeys: readonly string[];
  readonly deleteProtection: boolean;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly clusterKind: ClusterSpec["kind"];
  readonly k0sVersion?: string;
  readonly kubernetesVersion?: string;
  readonly kubelet: KubeletSettings;
}

export function poolTemplate(cluster: ClusterSpec, pool: HcloudAutoscaledPool): PoolTemplate {
  return {
    pool: pool.name,
    location: pool.location,
    serverTypes: [...pool.serverTypes],
    image: pool.image,
    sshKeys: [...pool.sshKeys],
    deleteProtection: pool.deleteProtection,
    labels: { ...pool.labels },
    taints: [...pool.taints],
    clusterKind: cluster.kind,
    ...(cluster.k0sVersion !== undefined ? { k0sVersion: cluster.k0sVersion } : {}),
    ...(cluster.kubernetesVersion !== undefined ? { kubernetesVersion: cluster.kubernetesVersion } : {}),
    kubelet: { ...cluster.kubelet },
  };
}

/** What a claim freezes at admission. */
export interface MemberSnapshot {
  readonly template: PoolTemplate;
  readonly serverType: string;
  readonly location: string;
  /** Labels from the request (Karpenter's NodeClaim labels), all of them, as the node object reports them. */
  readonly requestLabels: Readonly<Record<string, string>>;
  /** The part of requestLabels the kubelet accepts at registration; restricted ones are left to Karpenter. */
  readonly kubeletLabels: Readonly<Record<string, string>>;
  readonly requestTaints: readonly Taint[];
  readonly capacity: NodeResources;
  readonly allocatable: NodeResources;
  /** templateHash(template, serverType) at admission. */
  readonly templateHash: string;
  /**
   * Smallest slot free in the pool at admission, kept for the member's lifetime: the server goes to
   * spread placement group floor(slot / 10) and never has to move between groups.
   */
  readonly placementSlot: number;
}

/** The template as it concerns one member: the allowed types list only matters as "is mine still allowed". */
function memberProjection(template: PoolTemplate, serverType: string): Record<string, unknown> {
  const { serverTypes, ...rest } = template;
  return { ...rest, serverTypeAllowed: serverTypes.includes(serverType) };
}

// Listing nodes hashes the same current template once per node: remember it per template object.
const hashes = new WeakMap<PoolTemplate, Map<string, string>>();

export function templateHash(template: PoolTemplate, serverType: string): string {
  let byType = hashes.get(template);
  if (!byType) hashes.set(template, (byType = new Map()));
  let hash = byType.get(serverType);
  if (hash === undefined) {
    hash = canonicalHash(memberProjection(template, serverType)).slice(0, 16);
    byType.set(serverType, hash);
  }
  return hash;
}

const show = (v: unknown) => (v === undefined ? "unset" : typeof v === "string" ? v : canonicalJson(v));

/** The fields in which the current template differs from the snapshot, one readable entry each. */
export function driftReasons(snapshot: MemberSnapshot, current: PoolTemplate | undefined): string[] {
  if (!current) return [`pool ${snapshot.template.pool} is no longer an autoscaled pool of this stack`];
  if (templateHash(current, snapshot.serverType) === snapshot.templateHash) return [];
  const reasons: string[] = [];
  if (!current.serverTypes.includes(snapshot.serverType)) {
    reasons.push(`serverTypes: ${snapshot.serverType} is no longer allowed (allowed: ${current.serverTypes.join(", ")})`);
  }
  const fields = ["location", "image", "sshKeys", "deleteProtection", "labels", "taints", "clusterKind", "k0sVersion", "kubernetesVersion", "kubelet"] as const;
  for (const field of fields) {
    const before = snapshot.template[field];
    const after = current[field];
    if (canonicalJson(before) !== canonicalJson(after)) reasons.push(`${field}: ${show(before)} -> ${show(after)}`);
  }
  return reasons;
}
