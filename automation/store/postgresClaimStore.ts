/**
 * The claims in PostgreSQL, for several replicas of the service sharing them (scale-out mode): the
 * same ClaimRepository as the embedded SQLite store (claimRepository.ts), so a replayed create is
 * recognised by whichever replica it reaches. Admissions of one cluster are serialised across
 * replicas by `SELECT … FOR UPDATE` on the cluster's row of `claim_clusters`, so the pool's limits
 * and placement slots are counted with every committed admission in view (READ COMMITTED reads
 * each statement's snapshot after the lock is granted); UNIQUE (cluster_id, unique_id) backs it.
 * A replica admits the creates arriving together in one such transaction (postgresAdmissions.ts).
 * A COMMIT that returned is durable (synchronous_commit, the server default).
 */
import type pg from "pg";
import type { Claim, ClaimPatch, ClaimRow, ClaimStatus } from "./claimStore";
import { CLAIM_STATUSES, OCCUPYING_STATUSES, PATCH_COLUMNS, PATCH_KEYS, countsByStatus, fromRow } from "./claimStore";
import {
  deletePatch,
  type Admission,
  type AdmissionRequest,
  type AdmissionView,
  type ClaimListFilter,
  type ClaimRepository,
  type DeleteRequest,
  type NewClaim,
  type Occupancy,
} from "./claimRepository";
import { AdmissionGroups, emptyOccupancy, type GroupView } from "./postgresAdmissions";
import { inTransaction, openPostgresPool, type PostgresOptions } from "./postgresDatabase";

const SHARD_OF_ROW = "COALESCE(snapshot_json->>'shard', '0')";

/** The claims columns, the snapshot as text: rows decode as the SQLite store's do (claimStore.ts `fromRow`). */
const CLAIM_COLUMNS = `cluster_id, node_id, unique_id, request_hash, request_json, pool, instance_type, zone, snapshot_json::text AS snapshot_json,
  status, failure_code, failure_reason, instance_id, ipv4, private_ipv4, cpu_millis, memory_mib, created_at, updated_at,
  delete_requested_at, gone_at`;

/** Something that runs a query: the pool (autocommit) or a client inside a transaction. */
export type Queryable = Pick<pg.PoolClient, "query">;

export interface PostgresClaimStoreOptions extends PostgresOptions {
  readonly now?: () => Date;
}

export class PostgresClaimStore implements ClaimRepository {
  readonly backend = "postgres";
  /** Other replicas write the claims too: nothing derived from them is kept. */
  readonly claimsVersion = undefined;
  private readonly now: () => Date;
  private readonly admissions: AdmissionGroups;

  /** Over a pool opened by openPostgresPool; close() ends the pool only when the store owns it. */
  constructor(
    private readonly pool: pg.Pool,
    now: (() => Date) | undefined,
    private readonly ownsPool = false,
  ) {
    this.now = now ?? (() => new Date());
    this.admissions = new AdmissionGroups(pool, {
      lock: lockCluster,
      read: readGroupView,
      insert: insertClaims,
      timestamp: () => this.timestamp(),
    });
  }

  /** Connects (a pool of its own) and brings the schema up to date; refuses a schema newer than this nodefleet knows. */
  static async open(options: PostgresClaimStoreOptions): Promise<PostgresClaimStore> {
    return new PostgresClaimStore(await openPostgresPool(options), options.now, true);
  }

  timestamp(): string {
    return this.now().toISOString();
  }

  get(clusterId: string, nodeId: string): Promise<Claim | undefined> {
    return claimBy(this.pool, clusterId, "node_id", nodeId);
  }

  async status(clusterId: string, nodeId: string): Promise<ClaimStatus | undefined> {
    const result = await this.pool.query<{ status: ClaimStatus }>("SELECT status FROM claims WHERE cluster_id = $1 AND node_id = $2", [
      clusterId,
      nodeId,
    ]);
    return result.rows[0]?.status;
  }

  byUniqueId(clusterId: string, uniqueId: string): Promise<Claim | undefined> {
    return claimBy(this.pool, clusterId, "unique_id", uniqueId);
  }

  list(clusterId: string, filter: ClaimListFilter = {}): Promise<Claim[]> {
    return listClaims(this.pool, clusterId, filter);
  }

  occupancy(clusterId: string, pool: string): Promise<Occupancy> {
    return occupancy(this.pool, clusterId, pool);
  }

  privateNetworkMembers(clusterId: string): Promise<number> {
    return privateNetworkMembers(this.pool, clusterId);
  }

  async countByStatus(clusterId: string): Promise<Record<ClaimStatus, number>> {
    const result = await this.pool.query<{ status: ClaimStatus; n: number }>(
      "SELECT status, COUNT(*)::int AS n FROM claims WHERE cluster_id = $1 GROUP BY status",
      [clusterId],
    );
    return countsByStatus(result.rows);
  }

  async countByStatusInShard(clusterId: string, shard: string): Promise<Record<ClaimStatus, number>> {
    const result = await this.pool.query<{ status: ClaimStatus; n: number }>(
      `SELECT status, COUNT(*)::int AS n FROM claims WHERE cluster_id = $1 AND ${SHARD_OF_ROW} = $2 GROUP BY status`,
      [clusterId, shard],
    );
    return countsByStatus(result.rows);
  }

  shardOf(clusterId: string, nodeId: string): Promise<string | undefined> {
    return shardOf(this.pool, clusterId, nodeId);
  }

  async shards(clusterId: string, statuses: readonly ClaimStatus[]): Promise<string[]> {
    const result = await this.pool.query<{ shard: string }>(
      `SELECT DISTINCT ${SHARD_OF_ROW} AS shard FROM claims WHERE cluster_id = $1 AND status = ANY($2::text[]) ORDER BY shard`,
      [clusterId, statuses],
    );
    return result.rows.map((r) => r.shard);
  }

  admit(request: AdmissionRequest, decide: (view: AdmissionView) => NewClaim): Promise<Admission> {
    return this.admissions.admit(request, decide);
  }

  requestDelete(clusterId: string, nodeId: string): Promise<DeleteRequest> {
    return this.transaction(async (client): Promise<DeleteRequest> => {
      // The row itself is locked: a run's patch on another replica waits or has committed.
      const result = await client.query<{ status: ClaimStatus; shard: string }>(
        `SELECT status, ${SHARD_OF_ROW} AS shard FROM claims WHERE cluster_id = $1 AND node_id = $2 FOR UPDATE`,
        [clusterId, nodeId],
      );
      const row = result.rows[0];
      const patch = deletePatch(row?.status, this.timestamp());
      if (!row || !patch) return { found: row?.status };
      await patchClaim(client, clusterId, nodeId, patch, this.timestamp());
      return row.status === "PENDING" ? { found: row.status } : { found: row.status, shard: row.shard };
    });
  }

  update(clusterId: string, patches: ReadonlyArray<{ readonly nodeId: string; readonly patch: ClaimPatch }>): Promise<void> {
    return this.transaction(async (client) => {
      for (const { nodeId, patch } of patches) await patchClaim(client, clusterId, nodeId, patch, this.timestamp());
    });
  }

  /** Every COMMIT that returned is durable already. */
  durable(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return this.ownsPool ? this.pool.end() : Promise.resolve();
  }

  private transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }
}

/**
 * The cluster's claims by filter, by creation; with `forUpdate` (inside a transaction) each row is
 * locked until it ends, and a row another transaction changed meanwhile is read (and filtered) as committed.
 */
export async function listClaims(db: Queryable, clusterId: string, filter: ClaimListFilter, forUpdate = false): Promise<Claim[]> {
  const statuses = filter.statuses ?? CLAIM_STATUSES.filter((s) => s !== "GONE");
  const params: unknown[] = [clusterId, statuses];
  let sql = `SELECT ${CLAIM_COLUMNS} FROM claims WHERE cluster_id = $1 AND status = ANY($2::text[])`;
  if (filter.pool !== undefined) sql += ` AND pool = $${params.push(filter.pool)}`;
  if (filter.shard !== undefined) sql += ` AND ${SHARD_OF_ROW} = $${params.push(filter.shard)}`;
  const result = await db.query<ClaimRow>(`${sql} ORDER BY created_at, node_id${forUpdate ? " FOR UPDATE" : ""}`, params);
  return result.rows.map(fromRow);
}

/**
 * Takes the cluster's admission lock until the transaction ends: its row of claim_clusters, made on
 * the cluster's first admission (a concurrent first insert is waited for by ON CONFLICT).
 */
async function lockCluster(client: Queryable, clusterId: string): Promise<void> {
  const sql = "SELECT cluster_id FROM claim_clusters WHERE cluster_id = $1 FOR UPDATE";
  if ((await client.query(sql, [clusterId])).rowCount) return;
  await client.query("INSERT INTO claim_clusters (cluster_id) VALUES ($1) ON CONFLICT DO NOTHING", [clusterId]);
  await client.query(sql, [clusterId]);
}

/**
 * What a group of admissions decides by, read after its lock is granted (each statement's snapshot
 * then holds every admission committed before): the claims with the group's uniqueIDs or node ids,
 * each requested pool's occupancy and the private network's members.
 */
async function readGroupView(client: Queryable, clusterId: string, requests: readonly AdmissionRequest[]): Promise<GroupView> {
  const found = await client.query<ClaimRow>(
    `SELECT ${CLAIM_COLUMNS} FROM claims WHERE cluster_id = $1 AND (unique_id = ANY($2::text[]) OR node_id = ANY($3::text[]))`,
    [clusterId, requests.map((r) => r.uniqueId), requests.map((r) => r.nodeId)],
  );
  return {
    claims: found.rows.map(fromRow),
    occupancy: await occupancies(client, clusterId, [...new Set(requests.map((r) => r.pool))]),
    privateNetworkMembers: await privateNetworkMembers(client, clusterId),
  };
}

/** The cluster's claim with this node id or this uniqueID (both unique within a cluster). */
async function claimBy(db: Queryable, clusterId: string, key: "node_id" | "unique_id", value: string): Promise<Claim | undefined> {
  const result = await db.query<ClaimRow>(`SELECT ${CLAIM_COLUMNS} FROM claims WHERE cluster_id = $1 AND ${key} = $2`, [clusterId, value]);
  const row = result.rows[0];
  return row && fromRow(row);
}

async function shardOf(db: Queryable, clusterId: string, nodeId: string): Promise<string | undefined> {
  const result = await db.query<{ shard: string }>(`SELECT ${SHARD_OF_ROW} AS shard FROM claims WHERE cluster_id = $1 AND node_id = $2`, [
    clusterId,
    nodeId,
  ]);
  return result.rows[0]?.shard;
}

async function occupancy(db: Queryable, clusterId: string, pool: string): Promise<Occupancy> {
  return (await occupancies(db, clusterId, [pool])).get(pool)!;
}

/** Each pool's occupying claims: how many, their CPU and memory, and each placement slot's shard. */
async function occupancies(db: Queryable, clusterId: string, pools: readonly string[]): Promise<Map<string, Occupancy>> {
  const result = await db.query<{ pool: string; cpu: number; mem: number; slot: number | null; shard: string }>(
    `SELECT pool, cpu_millis AS cpu, memory_mib AS mem, placement_slot AS slot, ${SHARD_OF_ROW} AS shard
       FROM claims WHERE cluster_id = $1 AND pool = ANY($2::text[]) AND status = ANY($3::text[])`,
    [clusterId, pools, OCCUPYING_STATUSES],
  );
  const byPool = new Map(pools.map((pool) => [pool, { nodes: 0, cpuMillis: 0, memoryMiB: 0, slotShards: new Map<number, string>() }]));
  for (const row of result.rows) {
    const held = byPool.get(row.pool)!;
    held.nodes += 1;
    held.cpuMillis += row.cpu;
    held.memoryMiB += row.mem;
    if (row.slot !== null) held.slotShards.set(row.slot, row.shard);
  }
  const answer = new Map<string, Occupancy>();
  for (const [pool, { slotShards, ...usage }] of byPool) {
    answer.set(pool, usage.nodes === 0 ? emptyOccupancy() : { usage, placementSlots: [...slotShards.keys()], slotShards });
  }
  return answer;
}

async function privateNetworkMembers(db: Queryable, clusterId: string): Promise<number> {
  const result = await db.query<{ n: number }>(
    `SELECT COUNT(*)::int AS n FROM claims WHERE cluster_id = $1 AND status = ANY($2::text[])
       AND (snapshot_json #>> '{template,network}') IS DISTINCT FROM 'public'`,
    [clusterId, OCCUPYING_STATUSES],
  );
  return result.rows[0]!.n;
}

/** The claims, each with its own timestamps, in one statement. */
async function insertClaims(db: Queryable, claims: readonly Claim[]): Promise<void> {
  const values: unknown[] = [];
  const rows = claims.map((claim) => {
    const first = values.length + 1;
    values.push(
      claim.clusterId,
      claim.nodeId,
      claim.uniqueId,
      claim.requestHash,
      JSON.stringify(claim.request),
      claim.pool,
      claim.instanceType,
      claim.zone,
      JSON.stringify(claim.snapshot),
      claim.status,
      claim.failureCode ?? null,
      claim.failureReason ?? null,
      claim.instanceId ?? null,
      claim.ipv4 ?? null,
      claim.privateIpv4 ?? null,
      claim.cpuMillis,
      claim.memoryMiB,
      typeof claim.snapshot.placementSlot === "number" ? claim.snapshot.placementSlot : null,
      claim.createdAt,
      claim.updatedAt,
    );
    return `(${Array.from({ length: 20 }, (_, i) => `$${first + i}`).join(", ")})`;
  });
  await db.query(
    `INSERT INTO claims (cluster_id, node_id, unique_id, request_hash, request_json, pool, instance_type, zone, snapshot_json,
         status, failure_code, failure_reason, instance_id, ipv4, private_ipv4, cpu_millis, memory_mib, placement_slot, created_at, updated_at)
       VALUES ${rows.join(", ")}`,
    values,
  );
}

export async function patchClaim(db: Queryable, clusterId: string, nodeId: string, patch: ClaimPatch, at: string): Promise<void> {
  const keys = PATCH_KEYS.filter((key) => patch[key] !== undefined);
  const values: unknown[] = keys.map((key) => patch[key]);
  const sets = [...keys.map((key, i) => `${PATCH_COLUMNS[key]} = $${i + 1}`), `updated_at = $${values.push(at)}`];
  values.push(clusterId, nodeId);
  await db.query(`UPDATE claims SET ${sets.join(", ")} WHERE cluster_id = $${values.length - 1} AND node_id = $${values.length}`, values);
}
