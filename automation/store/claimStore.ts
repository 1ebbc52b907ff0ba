/**
 * Node claims: one row per node the API was asked for, from admission until the server is
 * confirmed gone (then kept as GONE, so a replayed create for a deleted NodeClaim is recognised).
 * Every write is a committed SQLite transaction before the HTTP answer goes out.
 */
import type { MemberSnapshot } from "./claimSnapshot";
import type Database from "better-sqlite3";
import type { Db } from "./database";
import { GroupCommit } from "./groupCommit";
import { isStorageFailure, storageFailureReason } from "./storageFailure";
import { walSyncOf } from "./walSync";

export const CLAIM_STATUSES = ["PENDING", "PROVISIONING", "RUNNING", "FAILED", "TERMINATING", "GONE"] as const;
export type ClaimStatus = (typeof CLAIM_STATUSES)[number];
/** Statuses the API reports (GONE is answered with 404). */
export type VisibleStatus = Exclude<ClaimStatus, "GONE">;
/** Claims that hold (or may hold) a server and count against the pool's limits. */
/** A row's API stack shard: claims without one in their snapshot live in shard 0 (reconciler/apiShard.ts). */
const SHARD_OF_ROW = "COALESCE(json_extract(snapshot_json, '$.shard'), '0')";

export const OCCUPYING_STATUSES: readonly ClaimStatus[] = ["PENDING", "PROVISIONING", "RUNNING", "TERMINATING"];

export interface Claim {
  readonly clusterId: string;
  readonly nodeId: string;
  readonly uniqueId: string;
  /** Hash of the canonical create body: the same uniqueID with another body is a conflict. */
  readonly requestHash: string;
  readonly request: unknown;
  readonly pool: string;
  readonly instanceType: string;
  readonly zone: string;
  readonly snapshot: MemberSnapshot;
  readonly status: ClaimStatus;
  readonly failureCode?: string;
  readonly failureReason?: string;
  readonly instanceId?: string;
  readonly ipv4?: string;
  readonly privateIpv4?: string;
  readonly cpuMillis: number;
  readonly memoryMiB: number;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly deleteRequestedAt?: string;
  readonly goneAt?: string;
}

/** A claims row as both backends read it (PostgreSQL hands the snapshot over as text, like SQLite). */
export interface ClaimRow {
  cluster_id: string;
  node_id: string;
  unique_id: string;
  request_hash: string;
  request_json: string;
  pool: string;
  instance_type: string;
  zone: string;
  snapshot_json: string;
  status: ClaimStatus;
  failure_code: string | null;
  failure_reason: string | null;
  instance_id: string | null;
  ipv4: string | null;
  private_ipv4: string | null;
  cpu_millis: number;
  memory_mib: number;
  created_at: string;
  updated_at: string;
  delete_requested_at: string | null;
  gone_at: string | null;
}

const opt = <K extends string, V>(key: K, value: V | null): { [P in K]?: V } =>
  (value === null ? {} : { [key]: value }) as { [P in K]?: V };

export function fromRow(row: ClaimRow): Claim {
  return {
    clusterId: row.cluster_id,
    nodeId: row.node_id,
    uniqueId: row.unique_id,
    requestHash: row.request_hash,
    request: JSON.parse(row.request_json) as unknown,
    pool: row.pool,
    instanceType: row.instance_type,
    zone: row.zone,
    snapshot: JSON.parse(row.snapshot_json) as MemberSnapshot,
    status: row.status,
    ...opt("failureCode", row.failure_code),
    ...opt("failureReason", row.failure_reason),
    ...opt("instanceId", row.instance_id),
    ...opt("ipv4", row.ipv4),
    ...opt("privateIpv4", row.private_ipv4),
    cpuMillis: row.cpu_millis,
    memoryMiB: row.memory_mib,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...opt("deleteRequestedAt", row.delete_requested_at),
    ...opt("goneAt", row.gone_at),
  };
}

export interface ClaimPatch {
  readonly status?: ClaimStatus;
  readonly failureCode?: string | null;
  readonly failureReason?: string | null;
  readonly instanceId?: string | null;
  readonly ipv4?: string | null;
  readonly privateIpv4?: string | null;
  readonly deleteRequestedAt?: string | null;
  readonly goneAt?: string | null;
}

export const PATCH_COLUMNS: Record<keyof ClaimPatch, string> = {
  status: "status",
  failureCode: "failure_code",
  failureReason: "failure_reason",
  instanceId: "instance_id",
  ipv4: "ipv4",
  privateIpv4: "private_ipv4",
  deleteRequestedAt: "delete_requested_at",
  goneAt: "gone_at",
};

export const PATCH_KEYS = Object.keys(PATCH_COLUMNS) as Array<keyof ClaimPatch>;

export interface PoolUsage {
  readonly nodes: number;
  readonly cpuMillis: number;
  readonly memoryMiB: number;
}

export class ClaimStore {
  private readonly group: GroupCommit;
  /**
   * Bumped by every write of a claim (also by one a savepoint then rolls back): what was derived
   * from the claims at one version (the node views of a list) is still right while it is unchanged.
   */
  private version = 0;
  private lastWriteFailure: { readonly reason: string; readonly since: string } | undefined;
  /** Prepared statements by SQL text (preparing costs more than running most of these). */
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.group = new GroupCommit(db);
  }

  /** Runs fn in one IMMEDIATE transaction, durable when it returns (the WAL is fsynced after the COMMIT). */
  transaction<T>(fn: () => T): T {
    let result: T;
    try {
      result = walSyncOf(this.db).writeDurably(() => this.db.transaction(fn).immediate());
    } catch (error) {
      this.noteWrite(error);
      throw error;
    }
    this.noteWrite();
    return result;
  }

  /**
   * Why the last write failed for want of storage (a full disk, an I/O error), and since when; none
   * once a write succeeds again. /readyz reports it even when no run has anything to do.
   */
  get writeFailure(): { readonly reason: string; readonly since: string } | undefined {
    return this.lastWriteFailure;
  }

  /** A write went through (no error), or failed: for want of storage, it is the store's condition until one goes through. */
  private noteWrite(error?: unknown): void {
    if (error === undefined) this.lastWriteFailure = undefined;
    else if (isStorageFailure(error))
      this.lastWriteFailure = { reason: storageFailureReason(error), since: this.lastWriteFailure?.since ?? this.timestamp() };
  }

  /** Resolves once every commit so far is durable. */
  durable(): Promise<void> {
    return this.group.durable();
  }

  /**
   * Runs fn atomically like transaction(), but shares the commit (and its fsync) with the other
   * writes of this turn of the event loop (groupCommit.ts); resolves once fn's writes are durable.
   */
  commitTogether<T>(fn: () => T): Promise<T> {
    return this.group.run(fn).then(
      (result) => {
        this.noteWrite();
        return result;
      },
      (error: unknown) => {
        this.noteWrite(error);
        throw error;
      },
    );
  }

  /** Changes whenever a claim may have changed. */
  get claimsVersion(): number {
    return this.version;
  }

  /** Group commits, writes, WAL syncs and checkpoints so far (benchmarks and tests). */
  get commitStats(): { groups: number; writes: number; syncs: number; checkpoints: number } {
    return { ...this.group.stats, checkpoints: this.group.checkpointCount };
  }

  private prepare(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  timestamp(): string {
    return this.now().toISOString();
  }

  /** Inserts the claim; returns it as stored (built from what was written: no read back). */
  insert(claim: Omit<Claim, "createdAt" | "updatedAt">): Claim {
    const at = this.timestamp();
    this.prepare(
      `INSERT INTO claims (cluster_id, node_id, unique_id, request_hash, request_json, pool, instance_type, zone, snapshot_json,
           status, failure_code, failure_reason, instance_id, ipv4, private_ipv4, cpu_millis, memory_mib, created_at, updated_at, placement_slot)
         VALUES (@cluster_id, @node_id, @unique_id, @request_hash, @request_json, @pool, @instance_type, @zone, @snapshot_json,
           @status, @failure_code, @failure_reason, @instance_id, @ipv4, @private_ipv4, @cpu_millis, @memory_mib, @at, @at, @placement_slot)`,
    ).run({
      cluster_id: claim.clusterId,
      node_id: claim.nodeId,
      unique_id: claim.uniqueId,
      request_hash: claim.requestHash,
      request_json: JSON.stringify(claim.request),
      pool: claim.pool,
      instance_type: claim.instanceType,
      zone: claim.zone,
      snapshot_json: JSON.stringify(claim.snapshot),
      status: claim.status,
      failure_code: claim.failureCode ?? null,
      failure_reason: claim.failureReason ?? null,
      instance_id: claim.instanceId ?? null,
      ipv4: claim.ipv4 ?? null,
      private_ipv4: claim.privateIpv4 ?? null,
      cpu_millis: claim.cpuMillis,
      memory_mib: claim.memoryMiB,
      placement_slot: typeof claim.snapshot.placementSlot === "number" ? claim.snapshot.placementSlot : null,
      at,
    });
    this.version += 1;
    return { ...claim, createdAt: at, updatedAt: at };
  }

  get(clusterId: string, nodeId: string): Claim | undefined {
    const row = this.prepare("SELECT * FROM claims WHERE cluster_id = ? AND node_id = ?").get(clusterId, nodeId) as ClaimRow | undefined;
    return row && fromRow(row);
  }

  /** The claim's status alone (no row decoded): what a delete decides by. */
  status(clusterId: string, nodeId: string): ClaimStatus | undefined {
    return this.prepare("SELECT status FROM claims WHERE cluster_id = ? AND node_id = ?").pluck().get(clusterId, nodeId) as
      ClaimStatus | undefined;
  }

  byUniqueId(clusterId: string, uniqueId: string): Claim | undefined {
    const row = this.prepare("SELECT * FROM claims WHERE cluster_id = ? AND unique_id = ?").get(clusterId, uniqueId) as
      ClaimRow | undefined;
    return row && fromRow(row);
  }

  list(clusterId: string, filter: { pool?: string; statuses?: readonly ClaimStatus[]; shard?: string } = {}): Claim[] {
    const statuses = filter.statuses ?? CLAIM_STATUSES.filter((s) => s !== "GONE");
    const rows = this.prepare(
      `SELECT * FROM claims WHERE cluster_id = ? AND status IN (${statuses.map(() => "?").join(",")})
         ${filter.pool !== undefined ? "AND pool = ?" : ""} ${filter.shard !== undefined ? `AND ${SHARD_OF_ROW} = ?` : ""}
         ORDER BY created_at, node_id`,
    ).all(
      clusterId,
      ...statuses,
      ...(filter.pool !== undefined ? [filter.pool] : []),
      ...(filter.shard !== undefined ? [filter.shard] : []),
    ) as ClaimRow[];
    return rows.map(fromRow);
  }

  /**
   * Patches the claim (no read back: callers that need the row read it). Bound by position: a
   * delete's patch runs on every Delete request, and named parameters built from the patch cost
   * several times the UPDATE itself.
   */
  update(clusterId: string, nodeId: string, patch: ClaimPatch): void {
    const keys = PATCH_KEYS.filter((key) => patch[key] !== undefined);
    const sets = [...keys.map((key) => `${PATCH_COLUMNS[key]} = ?`), "updated_at = ?"];
    this.prepare(`UPDATE claims SET ${sets.join(", ")} WHERE cluster_id = ? AND node_id = ?`).run(
      ...keys.map((key) => patch[key]),
      this.timestamp(),
      clusterId,
      nodeId,
    );
    this.version += 1;
  }

  /**
   * What the pool's occupying claims hold: their count and resources, and their placement slots
   * (a column beside the snapshot). One pass over the pool index: admission reads both on every create.
   */
  /** The pool's usage, its occupied placement slots, and the API stack shard of each (absent: shard 0). */
  occupancy(clusterId: string, pool: string): { usage: PoolUsage; placementSlots: number[]; slotShards: Map<number, string> } {
    const row = this.prepare(
      `SELECT COUNT(*) AS nodes, COALESCE(SUM(cpu_millis), 0) AS cpu, COALESCE(SUM(memory_mib), 0) AS mem,
              group_concat(placement_slot || ':' || ${SHARD_OF_ROW}, ' ') AS slots
         FROM claims WHERE cluster_id = ? AND pool = ? AND status IN (${OCCUPYING_STATUSES.map(() => "?").join(",")})`,
    ).get(clusterId, pool, ...OCCUPYING_STATUSES) as { nodes: number; cpu: number; mem: number; slots: string | null };
    // group_concat leaves out the claims without a slot (NULL); a shard never holds a space.
    const slotShards = new Map<number, string>(
      (row.slots === null ? [] : row.slots.split(" ")).map((entry) => {
        const colon = entry.indexOf(":");
        return [Number(entry.slice(0, colon)), entry.slice(colon + 1)];
      }),
    );
    return { usage: { nodes: row.nodes, cpuMillis: row.cpu, memoryMiB: row.mem }, placementSlots: [...slotShards.keys()], slotShards };
  }

  /** Claims by status in one API stack shard (absent in the snapshot: shard 0). */
  countByStatusInShard(clusterId: string, shard: string): Record<ClaimStatus, number> {
    const rows = this.prepare(
      `SELECT status, COUNT(*) AS n FROM claims
         WHERE cluster_id = ? AND ${SHARD_OF_ROW} = ? GROUP BY status`,
    ).all(clusterId, shard) as Array<{ status: ClaimStatus; n: number }>;
    return countsByStatus(rows);
  }

  /** The API stack shard of one claim (undefined when there is no such claim). */
  shardOf(clusterId: string, nodeId: string): string | undefined {
    const row = this.prepare(`SELECT ${SHARD_OF_ROW} AS shard FROM claims WHERE cluster_id = ? AND node_id = ?`).get(clusterId, nodeId) as
      { shard: string } | undefined;
    return row?.shard;
  }

  /** The shards holding the cluster's claims in these statuses. */
  shards(clusterId: string, statuses: readonly ClaimStatus[]): string[] {
    const rows = this.prepare(
      `SELECT DISTINCT ${SHARD_OF_ROW} AS shard FROM claims
         WHERE cluster_id = ? AND status IN (${statuses.map(() => "?").join(",")}) ORDER BY shard`,
    ).all(clusterId, ...statuses) as Array<{ shard: string }>;
    return rows.map((r) => r.shard);
  }

  usage(clusterId: string, pool: string): PoolUsage {
    return this.occupancy(clusterId, pool).usage;
  }

  /**
   * The cluster's occupying claims whose member joins the private network: every pool's, by the
   * network frozen in its snapshot (absent: private), so a pool moved to public still counts the
   * members it admitted on the network while they live.
   */
  privateNetworkMembers(clusterId: string): number {
    const row = this.prepare(
      `SELECT COUNT(*) AS n FROM claims WHERE cluster_id = ? AND status IN (${OCCUPYING_STATUSES.map(() => "?").join(",")})
         AND json_extract(snapshot_json, '$.template.network') IS NOT 'public'`,
    ).get(clusterId, ...OCCUPYING_STATUSES) as { n: number };
    return row.n;
  }

  /** Placement slots of the pool's occupying claims. */
  usedPlacementSlots(clusterId: string, pool: string): number[] {
    return this.occupancy(clusterId, pool).placementSlots;
  }

  countByStatus(clusterId: string): Record<ClaimStatus, number> {
    const rows = this.prepare("SELECT status, COUNT(*) AS n FROM claims WHERE cluster_id = ? GROUP BY status").all(clusterId) as Array<{
      status: ClaimStatus;
      n: number;
    }>;
    return countsByStatus(rows);
  }
}

/** Every status's count (0 for those without a row) from `status, COUNT(*)` rows. */
export function countsByStatus(rows: ReadonlyArray<{ readonly status: ClaimStatus; readonly n: number }>): Record<ClaimStatus, number> {
  const counts = Object.fromEntries(CLAIM_STATUSES.map((s) => [s, 0])) as Record<ClaimStatus, number>;
  for (const r of rows) counts[r.status] = r.n;
  return counts;
}
