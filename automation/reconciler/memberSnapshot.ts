/**
 * Frozen members. A claim keeps the pool template it was admitted with, and its member is always
 * rendered from that snapshot: changing a pool template in git never replaces a running node.
 * Drift is the snapshot's hash differing from the current template's (projected onto what matters
 * for this member), reported with the differing fields so Karpenter can replace the node gracefully.
 */
import { canonicalHash, canonicalJson } from "../../components/shared/canonicalJson";
import type { ClusterSpec, HcloudAutoscaledPool, Taint } from "../../components/fleet/fleetSpec";
import { mergeTaints } from "../../components/fleet/taints";
import { HCLOUD_PROVIDER_ID_FROM_METADATA, providerIdFor } from "../../components/fleet/naming";
import { type HcloudArchitecture, serverTypeArchitecture } from "../../components/fleet/poolImages";
import type { ArchitectureImage } from "../catalog/poolImageResolution";
import type { MemberSnapshot, PoolTemplate } from "../store/claimSnapshot";

// Every create and every node view needs the template of its pool, and hashing it (templateHash,
// remembered per template object) costs more than the rest of a view: one template per spec object.
const templates = new WeakMap<HcloudAutoscaledPool, WeakMap<ClusterSpec, PoolTemplate>>();

/**
 * The pool's current template. `images`, for a pool with `imageSelector`, is its selector's
 * resolution (catalog/poolImageResolution.ts): each architecture's image goes into
 * `imagesByArchitecture`; an architecture without one is left out, so no member of it is admitted.
 */
export function poolTemplate(
  cluster: ClusterSpec,
  pool: HcloudAutoscaledPool,
  images?: ReadonlyMap<HcloudArchitecture, ArchitectureImage>,
): PoolTemplate {
  if (images !== undefined) return withResolvedImages(poolTemplate(cluster, pool), images);
  let byCluster = templates.get(pool);
  if (!byCluster) templates.set(pool, (byCluster = new WeakMap()));
  let template = byCluster.get(cluster);
  if (!template) byCluster.set(cluster, (template = buildPoolTemplate(cluster, pool)));
  return template;
}

// One template object per resolution, so the per-template hash cache keeps working between refreshes.
const resolvedTemplates = new WeakMap<PoolTemplate, WeakMap<ReadonlyMap<HcloudArchitecture, ArchitectureImage>, PoolTemplate>>();

function withResolvedImages(template: PoolTemplate, images: ReadonlyMap<HcloudArchitecture, ArchitectureImage>): PoolTemplate {
  let byResolution = resolvedTemplates.get(template);
  if (!byResolution) resolvedTemplates.set(template, (byResolution = new WeakMap()));
  let resolved = byResolution.get(images);
  if (!resolved) {
    const imagesByArchitecture: Partial<Record<HcloudArchitecture, string>> = {};
    for (const [architecture, answer] of images) if ("image" in answer) imagesByArchitecture[architecture] = answer.image;
    byResolution.set(images, (resolved = { ...template, imagesByArchitecture }));
  }
  return resolved;
}

function buildPoolTemplate(cluster: ClusterSpec, pool: HcloudAutoscaledPool): PoolTemplate {
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
    // Only when set: templates of private pools keep the hash their members were admitted with.
    ...(pool.network === "public" ? { network: "public" as const } : {}),
    ...(pool.placement === "none" ? { placement: "none" as const } : {}),
    ...(pool.placement !== "none" && (pool.locations?.length ?? 0) > 1 ? { locations: [...pool.locations!] } : {}),
    // Only when off: members admitted with public addresses keep their hash.
    ...(pool.publicIpv4 === false ? { publicIpv4: false as const } : {}),
    ...(pool.publicIpv6 === false ? { publicIpv6: false as const } : {}),
    ...(cluster.hcloudProviderIds === "hcloud" ? { providerIds: "hcloud" as const } : {}),
  };
}

/**
 * The providerID a member is rendered with, by its snapshot: HCLOUD_PROVIDER_ID_FROM_METADATA (read
 * at boot) for a member admitted with `hcloudProviderIds: hcloud`, else `<scheme>:///<cluster>/<node id>`.
 */
export function memberProviderId(cluster: Pick<ClusterSpec, "id" | "providerIdScheme">, nodeId: string, template: PoolTemplate): string {
  return template.providerIds === "hcloud" ? HCLOUD_PROVIDER_ID_FROM_METADATA : providerIdFor(cluster, nodeId);
}

/** The member's taints: the pool's and the request's merged by (key, effect), the request's value winning. */
export function memberTaints(snapshot: Pick<MemberSnapshot, "template" | "requestTaints">): Taint[] {
  return mergeTaints(snapshot.template.taints, snapshot.requestTaints);
}

/**
 * The image a member of `serverType` boots: with `imagesByArchitecture` (a pool with `imageSelector`),
 * the one of its type's architecture, undefined when none was resolved for it; else the pool's `image`.
 */
export function memberImage(template: PoolTemplate, serverType: string): string | undefined {
  if (template.imagesByArchitecture === undefined) return template.image;
  return template.imagesByArchitecture[serverTypeArchitecture(serverType)];
}

/**
 * The template as it concerns one member: the allowed types list only matters as "is mine still
 * allowed", and of the images resolved per architecture only its own, so a newer snapshot for arm
 * drifts the arm members and leaves the x86 ones alone; the pool's `locations` not at all (a running
 * server never moves, and its spread group is its own location's). Templates without `imagesByArchitecture`
 * project as before, keeping the hashes their members were admitted with.
 */
function memberProjection(template: PoolTemplate, serverType: string): Record<string, unknown> {
  const { serverTypes, imagesByArchitecture, locations: _locations, ...rest } = template;
  return {
    ...rest,
    ...(imagesByArchitecture !== undefined ? { image: memberImage(template, serverType) ?? null } : {}),
    serverTypeAllowed: serverTypes.includes(serverType),
  };
}

/**
 * The whole pool template's fingerprint, in the cluster's description: any change that could drift
 * one of the pool's nodes changes it, so a driver watching it knows when to re-check drift.
 */
export function poolTemplateHash(template: PoolTemplate): string {
  return canonicalHash(template).slice(0, 16);
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

/** A Kubernetes condition Reason: Karpenter turns IsDrifted's answer into one and refuses anything else. */
export const DRIFT_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** One drifted field: `reason` is Reason-safe (e.g. ImageDrift), `detail` says what changed, for people. */
export interface Drift {
  readonly reason: string;
  readonly detail: string;
}

/** The template fields compared, with the Reason each reports when it differs. */
const DRIFT_FIELDS = {
  location: "LocationDrift",
  image: "ImageDrift",
  sshKeys: "SshKeysDrift",
  deleteProtection: "DeleteProtectionDrift",
  labels: "LabelsDrift",
  taints: "TaintsDrift",
  clusterKind: "ClusterKindDrift",
  k0sVersion: "K0sVersionDrift",
  kubernetesVersion: "KubernetesVersionDrift",
  kubelet: "KubeletDrift",
  network: "NetworkDrift",
  placement: "PlacementDrift",
  providerIds: "ProviderIdDrift",
} as const satisfies Partial<Record<keyof PoolTemplate, string>>;

/** The fields in which the current template differs from the snapshot, one entry each. */
export function drifts(snapshot: MemberSnapshot, current: PoolTemplate | undefined): Drift[] {
  if (!current) return [{ reason: "PoolRemoved", detail: `pool ${snapshot.template.pool} is no longer an autoscaled pool of this stack` }];
  if (templateHash(current, snapshot.serverType) === snapshot.templateHash) return [];
  const found: Drift[] = [];
  if (!current.serverTypes.includes(snapshot.serverType)) {
    found.push({
      reason: "ServerTypeDrift",
      detail: `serverTypes: ${snapshot.serverType} is no longer allowed (allowed: ${current.serverTypes.join(", ")})`,
    });
  }
  for (const [field, reason] of Object.entries(DRIFT_FIELDS) as Array<[keyof typeof DRIFT_FIELDS, string]>) {
    // The image compared is the member's own: its architecture's when the pool resolves a selector.
    const before = field === "image" ? memberImage(snapshot.template, snapshot.serverType) : snapshot.template[field];
    const after = field === "image" ? memberImage(current, snapshot.serverType) : current[field];
    if (canonicalJson(before) !== canonicalJson(after)) found.push({ reason, detail: `${field}: ${show(before)} -> ${show(after)}` });
  }
  return found;
}
