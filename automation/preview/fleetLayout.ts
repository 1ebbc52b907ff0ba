/**
 * What a preview needs to know about a fleet config beyond the engine's steps: the cluster id and,
 * per pool, the server types its members run on, and which config fields changed between two
 * configs (the base branch's and the pull request's). The engine steps name resources, not server
 * types, and a new server generation is a create plus a delete rather than a Pulumi replace, so
 * these facts are what lets the preview say "cpx31 -> cpx41" or "user data (labels changed)".
 */
import type { FleetSpec, PoolSpec } from "../../components/fleet/fleetSpec";

export interface PoolLayout {
  readonly name: string;
  readonly provider: PoolSpec["provider"];
  readonly mode: "static" | "autoscaled";
  /** Server types (or Elastic Metal offers) members of this pool are created with. */
  readonly serverTypes: readonly string[];
}

export interface FleetLayout {
  readonly clusterId: string;
  readonly pools: readonly PoolLayout[];
}

/** Server types members actually use: a static hcloud pool uses its first type; an autoscaled one any of them. */
function serverTypesOf(pool: PoolSpec): string[] {
  switch (pool.provider) {
    case "hcloud":
      return pool.mode === "static" ? pool.serverTypes.slice(0, 1) : [...pool.serverTypes];
    case "scaleway-elastic-metal":
      return [pool.offer];
    case "hetzner-robot":
      return [pool.serverType];
  }
}

export function fleetLayout(spec: FleetSpec): FleetLayout {
  return {
    clusterId: spec.cluster.id,
    pools: spec.pools.map((pool) => ({ name: pool.name, provider: pool.provider, mode: pool.mode, serverTypes: serverTypesOf(pool) })),
  };
}

/** A pool field that changed and the server input it reaches. */
export interface ConfigChange {
  /** `pool.labels`, `cluster.k0sVersion`, ... */
  readonly field: string;
  /** The server input the change lands in: `serverType`, `image`, `location`, `sshKeys` or `userData`. */
  readonly serverInput: string;
}

/** Pool fields that are server inputs under another name; the rest reach the user data or nothing. */
const POOL_FIELD_INPUT: Readonly<Record<string, string>> = {
  serverTypes: "serverType",
  offer: "serverType",
  image: "image",
  os: "image",
  location: "location",
  zone: "location",
  sshKeys: "sshKeys",
  sshKeyIds: "sshKeys",
};
/** Fields that decide how many members there are or are updated in place: never a new generation. */
const POOL_FIELDS_WITHOUT_REGENERATION = new Set([
  "name",
  "provider",
  "mode",
  "replicas",
  "nodes",
  "limits",
  "deleteProtection",
  "rollout",
]);
/** Cluster fields rendered into user data (everything except secrets and the ones the program does not render). */
const CLUSTER_FIELDS_WITHOUT_REGENERATION = new Set(["kubeconfig", "bootstrapTokenTtlMinutes", "bootstrapTokenJoinMarginMinutes"]);

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The config fields that differ between two versions of a pool (and of the cluster it joins) and
 * that can force a new server generation, in a stable order. Only the first server type of a
 * static pool is in use, so reordering the rest changes nothing.
 */
function regeneratingChanges(
  before: { cluster: FleetSpec["cluster"]; pool: PoolSpec },
  after: { cluster: FleetSpec["cluster"]; pool: PoolSpec },
): ConfigChange[] {
  const changes: ConfigChange[] = [];
  const beforePool = before.pool as unknown as Record<string, unknown>;
  const afterPool = after.pool as unknown as Record<string, unknown>;
  const poolKeys = [...new Set([...Object.keys(beforePool), ...Object.keys(afterPool)])].sort();
  for (const key of poolKeys) {
    if (POOL_FIELDS_WITHOUT_REGENERATION.has(key)) continue;
    const changed =
      key === "serverTypes" ? !same(serverTypesOf(before.pool), serverTypesOf(after.pool)) : !same(beforePool[key], afterPool[key]);
    if (changed) changes.push({ field: `pool.${key}`, serverInput: POOL_FIELD_INPUT[key] ?? "userData" });
  }
  const beforeCluster = before.cluster as unknown as Record<string, unknown>;
  const afterCluster = after.cluster as unknown as Record<string, unknown>;
  const clusterKeys = [...new Set([...Object.keys(beforeCluster), ...Object.keys(afterCluster)])].sort();
  for (const key of clusterKeys) {
    if (CLUSTER_FIELDS_WITHOUT_REGENERATION.has(key)) continue;
    if (!same(beforeCluster[key], afterCluster[key])) changes.push({ field: `cluster.${key}`, serverInput: "userData" });
  }
  return changes;
}

/** Per pool present in both configs, the changes that may force new server generations. */
export function configChangesByPool(before: FleetSpec, after: FleetSpec): Record<string, ConfigChange[]> {
  const out: Record<string, ConfigChange[]> = {};
  for (const pool of after.pools) {
    const previous = before.pools.find((p) => p.name === pool.name);
    if (!previous) continue;
    const changes = regeneratingChanges({ cluster: before.cluster, pool: previous }, { cluster: after.cluster, pool });
    if (changes.length > 0) out[pool.name] = changes;
  }
  return out;
}
