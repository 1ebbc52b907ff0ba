/**
 * A claim store held in Maps, for apiLoad.bench.ts only: the service's figures with it are what the
 * API costs when its store costs nothing (no SQLite, no fsync), an upper bound no durable store can
 * pass. Not durable, not crash-safe; nothing but the bench builds one.
 */
import {
  CLAIM_STATUSES,
  ClaimStore,
  OCCUPYING_STATUSES,
  type Claim,
  type ClaimPatch,
  type ClaimStatus,
  type PoolUsage,
} from "../automation/store/claimStore";
import { shardOfClaim } from "../automation/reconciler/apiShard";

type MutableClaim = { -readonly [K in keyof Claim]: Claim[K] };

const key = (first: string, second: string): string => `${first}\u0000${second}`;

export class MemoryClaimStore extends ClaimStore {
  private readonly byNode = new Map<string, MutableClaim>();
  private readonly byUnique = new Map<string, MutableClaim>();
  /** The occupying claims of each pool (cluster and pool): admission reads them on every create. */
  private readonly occupying = new Map<string, Set<MutableClaim>>();
  private writes = 0;

  override get claimsVersion(): number {
    return this.writes;
  }

  override transaction<T>(fn: () => T): T {
    return fn();
  }

  /** Resolves on the next turn, as a group commit does once its batch is durable (without the fsync). */
  override commitTogether<T>(fn: () => T): Promise<T> {
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        try {
          resolve(fn());
        } catch (error) {
          reject(error);
        }
      }),
    );
  }

  override durable(): Promise<void> {
    return Promise.resolve();
  }

  override insert(claim: Omit<Claim, "createdAt" | "updatedAt">): Claim {
    const at = this.timestamp();
    const stored: MutableClaim = { ...claim, createdAt: at, updatedAt: at };
    this.byNode.set(key(claim.clusterId, claim.nodeId), stored);
    this.byUnique.set(key(claim.clusterId, claim.uniqueId), stored);
    if (OCCUPYING_STATUSES.includes(claim.status)) this.poolSet(claim.clusterId, claim.pool).add(stored);
    this.writes += 1;
    return { ...stored };
  }

  override get(clusterId: string, nodeId: string): Claim | undefined {
    const stored = this.byNode.get(key(clusterId, nodeId));
    return stored && { ...stored };
  }

  override status(clusterId: string, nodeId: string): ClaimStatus | undefined {
    return this.byNode.get(key(clusterId, nodeId))?.status;
  }

  override byUniqueId(clusterId: string, uniqueId: string): Claim | undefined {
    const stored = this.byUnique.get(key(clusterId, uniqueId));
    return stored && { ...stored };
  }

  override list(clusterId: string, filter: { pool?: string; statuses?: readonly ClaimStatus[]; shard?: string } = {}): Claim[] {
    const statuses = filter.statuses ?? CLAIM_STATUSES.filter((status) => status !== "GONE");
    return [...this.byNode.values()]
      .filter(
        (claim) =>
          claim.clusterId === clusterId &&
          statuses.includes(claim.status) &&
          (filter.pool === undefined || claim.pool === filter.pool) &&
          (filter.shard === undefined || shardOfClaim(claim) === filter.shard),
      )
      .map((claim) => ({ ...claim }));
  }

  override update(clusterId: string, nodeId: string, patch: ClaimPatch): void {
    const stored = this.byNode.get(key(clusterId, nodeId));
    if (!stored) return;
    const fields = stored as Record<string, unknown>;
    for (const [field, value] of Object.entries(patch)) {
      // null clears a column, as in the SQLite store (read back as absent).
      if (value === null) delete fields[field];
      else if (value !== undefined) fields[field] = value;
    }
    stored.updatedAt = this.timestamp();
    const pool = this.poolSet(clusterId, stored.pool);
    if (OCCUPYING_STATUSES.includes(stored.status)) pool.add(stored);
    else pool.delete(stored);
    this.writes += 1;
  }

  override occupancy(clusterId: string, pool: string): { usage: PoolUsage; placementSlots: number[]; slotShards: Map<number, string> } {
    const usage = { nodes: 0, cpuMillis: 0, memoryMiB: 0 };
    const slotShards = new Map<number, string>();
    for (const claim of this.poolSet(clusterId, pool)) {
      usage.nodes += 1;
      usage.cpuMillis += claim.cpuMillis;
      usage.memoryMiB += claim.memoryMiB;
      if (typeof claim.snapshot.placementSlot === "number") slotShards.set(claim.snapshot.placementSlot, shardOfClaim(claim));
    }
    return { usage, placementSlots: [...slotShards.keys()], slotShards };
  }

  override countByStatus(clusterId: string): Record<ClaimStatus, number> {
    return this.counted(clusterId, () => true);
  }

  override countByStatusInShard(clusterId: string, shard: string): Record<ClaimStatus, number> {
    return this.counted(clusterId, (claim) => shardOfClaim(claim) === shard);
  }

  override shardOf(clusterId: string, nodeId: string): string | undefined {
    const claim = this.byNode.get(key(clusterId, nodeId));
    return claim ? shardOfClaim(claim) : undefined;
  }

  override shards(clusterId: string, statuses: readonly ClaimStatus[]): string[] {
    const found = new Set<string>();
    for (const claim of this.byNode.values())
      if (claim.clusterId === clusterId && statuses.includes(claim.status)) found.add(shardOfClaim(claim));
    return [...found].sort();
  }

  private counted(clusterId: string, include: (claim: Claim) => boolean): Record<ClaimStatus, number> {
    const counts = Object.fromEntries(CLAIM_STATUSES.map((status) => [status, 0])) as Record<ClaimStatus, number>;
    for (const claim of this.byNode.values()) if (claim.clusterId === clusterId && include(claim)) counts[claim.status] += 1;
    return counts;
  }

  private poolSet(clusterId: string, pool: string): Set<MutableClaim> {
    const poolKey = key(clusterId, pool);
    let claims = this.occupying.get(poolKey);
    if (!claims) {
      claims = new Set();
      this.occupying.set(poolKey, claims);
    }
    return claims;
  }
}
