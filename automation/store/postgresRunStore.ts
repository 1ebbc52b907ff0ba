/**
 * The engine runs' writes in PostgreSQL, beside the claims (postgresClaimStore.ts), for several
 * replicas sharing them. A run's begin locks the shard's claims it reads (`FOR UPDATE`), so a delete
 * on another replica either committed before (and is seen) or waits and then sees PROVISIONING; its
 * record locks the claims it patches the same way. Each is one transaction with the operation-log
 * entry and the guard fingerprint. A COMMIT that returned is durable (synchronous_commit).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Pool, PoolClient } from "pg";
import { fingerprintOfJson, type GuardFingerprint } from "./guardFingerprints";
import {
  finishedColumns,
  operationFromRow,
  type Operation,
  type OperationKind,
  type OperationOutcome,
  type OperationRow,
} from "./operationLog";
import { listClaims, patchClaim, type Queryable } from "./postgresClaimStore";
import { inTransaction } from "./postgresDatabase";
import type { ClaimStatus } from "./claimStore";
import {
  MEMBER_STATUSES,
  RUN_STATUSES,
  claimOutcomeWrite,
  runAffected,
  runMembers,
  type BeginRequest,
  type BegunRun,
  type RecordRequest,
  type HeldRunLock,
  type RunStore,
} from "./runStore";

/**
 * The run locks' class, the first key of `pg_try_advisory_lock(int, int)`; the second is
 * `hashtext('<cluster>/<shard>')`. Two shards whose names hash alike only wait for each other.
 * (Two-key locks never meet the one-key migration lock, postgresDatabase.ts.)
 */
const RUN_LOCK_CLASS = 7_210_432;
/** How often a replica asks again for a shard's run lock another replica holds. */
/** How long one wait for the run lock lasts before the waiter looks whether its replica is stopping. */
const RUN_LOCK_WAIT_MS = 500;
/** PostgreSQL's lock_not_available: a wait that lock_timeout ended. */
const LOCK_NOT_AVAILABLE = "55P03";

const OPERATION_COLUMNS = "id, cluster_id, kind, started_at, finished_at, result, summary_json, nodes_json, error, details_json";

/** How long runLockHeld waits for PostgreSQL to confirm the lock before taking it as lost. */
const RUN_LOCK_CHECK_MS = 10_000;

/**
 * Whether this session holds the run lock now, as `pg_locks` shows it (a two-key advisory lock is
 * `classid`, `objid`, `objsubid = 2`); false once the connection was lost, on an error, or when
 * PostgreSQL does not answer within RUN_LOCK_CHECK_MS.
 */
async function confirmHeld(client: PoolClient, key: [number, string], lost: AbortSignal): Promise<boolean> {
  if (lost.aborted) return false;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), RUN_LOCK_CHECK_MS)));
  const asked = client
    .query<{ held: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
         AND objsubid = 2 AND classid = ($1::int4)::oid AND objid = (hashtext($2))::oid) AS held`,
      key,
    )
    .then(
      (result) => result.rows[0]?.held === true,
      () => false,
    );
  try {
    return (await Promise.race([asked, late])) && !lost.aborted;
  } finally {
    clearTimeout(timer);
  }
}

export class PostgresRunStore implements RunStore {
  private readonly now: () => Date;
  private readonly held = new AsyncLocalStorage<HeldRunLock>();

  /** Over a pool opened by openPostgresPool (postgresDatabase.ts); its owner ends it. */
  constructor(
    private readonly pool: Pool,
    now?: () => Date,
  ) {
    this.now = now ?? (() => new Date());
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  /**
   * A session-level advisory lock on a connection of its own, held for the whole run (begin,
   * preview, up, record). Waited for in PostgreSQL's lock queue, so replicas take turns in the
   * order they asked (a replica that just ran does not win again over one waiting), in waits of
   * RUN_LOCK_WAIT_MS (lock_timeout) between which a stopping replica gives up. A connection lost
   * during the run loses the lock with it: the run is told (`runLockHeld().lost`; the automation
   * engine then stops its CLI), and the stack's backend lock (Pulumi's, or the simulated engine's)
   * is what keeps a second `up` out meanwhile. The run's own transactions take other connections:
   * the pool's owner sizes it beyond the runs at once.
   */
  async exclusively<T>(clusterId: string, shard: string, run: () => Promise<T>, stopping: () => boolean): Promise<T | undefined> {
    const client = await this.pool.connect();
    const key: [number, string] = [RUN_LOCK_CLASS, `${clusterId}/${shard}`];
    const lost = new AbortController();
    let broken: Error | undefined;
    // A connection the server ends between queries must not take the process down: it is the lock's loss.
    const onLost = (error?: unknown) => {
      broken ??= error instanceof Error ? error : new Error("the connection holding the run lock ended");
      lost.abort(broken);
    };
    client.on("error", onLost);
    client.on("end", onLost);
    try {
      if (!(await waitForLock(client, key, stopping))) return undefined;
      const held: HeldRunLock = { clusterId, shard, lost: lost.signal, confirm: () => confirmHeld(client, key, lost.signal) };
      try {
        return await this.held.run(held, run);
      } finally {
        // A connection that cannot unlock is closed: PostgreSQL releases a session's locks with it.
        await client.query("SELECT pg_advisory_unlock($1, hashtext($2))", key).catch((failure: unknown) => {
          broken ??= failure instanceof Error ? failure : new Error(String(failure));
        });
      }
    } finally {
      client.off("error", onLost);
      client.off("end", onLost);
      client.release(broken);
    }
  }

  /** The lock of the `exclusively` the caller runs in (AsyncLocalStorage follows it through the run's awaits). */
  runLockHeld(): HeldRunLock | undefined {
    return this.held.getStore();
  }

  beginRun({ clusterId, shard, kind }: BeginRequest): Promise<BegunRun | undefined> {
    return inTransaction(this.pool, async (client) => {
      const claims = await listClaims(client, clusterId, { statuses: RUN_STATUSES, shard }, true);
      const affected = runAffected(claims);
      if (affected.length === 0) return undefined;
      const at = this.timestamp();
      const pending = claims.filter((c) => c.status === "PENDING").map((c) => c.nodeId);
      if (pending.length > 0)
        await client.query(
          "UPDATE claims SET status = 'PROVISIONING', updated_at = $3 WHERE cluster_id = $1 AND node_id = ANY($2::text[])",
          [clusterId, pending, at],
        );
      // One run of a shard at a time (one reconciler per shard in a replica, the run lock across
      // replicas): an operation of the shard still running was cut short (a crash or a kill).
      await client.query(
        "UPDATE operations SET result = 'abandoned', finished_at = $3, error = $4 WHERE cluster_id = $1 AND shard = $2 AND result = 'running'",
        [clusterId, shard, at, "the service running this run stopped (crash or kill); its claims are reconciled again"],
      );
      const operationId = await startOperation(client, { clusterId, shard, kind, nodes: affected, at });
      const members = runMembers(await listClaims(client, clusterId, { statuses: MEMBER_STATUSES, shard }), affected);
      return { claims, members, operationId };
    });
  }

  recordRun(request: RecordRequest): Promise<string[]> {
    const { clusterId } = request;
    return inTransaction(this.pool, async (client) => {
      const found = await client.query<{ node_id: string; status: ClaimStatus }>(
        "SELECT node_id, status FROM claims WHERE cluster_id = $1 AND node_id = ANY($2::text[]) ORDER BY node_id FOR UPDATE",
        [clusterId, request.updates.map((u) => u.nodeId)],
      );
      const statusOf = new Map(found.rows.map((row) => [row.node_id, row.status]));
      const at = this.timestamp();
      const moved: string[] = [];
      for (const update of request.updates) {
        const write = claimOutcomeWrite(statusOf.get(update.nodeId), update);
        if (!write) continue;
        await patchClaim(client, clusterId, update.nodeId, write.patch, at);
        if (write.moved) moved.push(update.nodeId);
      }
      if (request.fingerprint)
        await client.query(
          `INSERT INTO guard_fingerprints (cluster_id, parts_json, recorded_at) VALUES ($1, $2, $3)
             ON CONFLICT (cluster_id) DO UPDATE SET parts_json = excluded.parts_json, recorded_at = excluded.recorded_at`,
          [request.fingerprintKey, JSON.stringify(request.fingerprint), at],
        );
      else await client.query("DELETE FROM guard_fingerprints WHERE cluster_id = $1", [request.fingerprintKey]);
      await finishOperation(client, request.operationId, request.operation, at);
      return moved;
    });
  }

  startOperation(clusterId: string, shard: string, kind: OperationKind, nodes: readonly string[]): Promise<number> {
    return startOperation(this.pool, { clusterId, shard, kind, nodes, at: this.timestamp() });
  }

  async operationBecomesUp(id: number): Promise<void> {
    await this.pool.query("UPDATE operations SET kind = 'up' WHERE id = $1 AND result = 'running'", [id]);
  }

  finishOperation(id: number, outcome: OperationOutcome): Promise<void> {
    return finishOperation(this.pool, id, outcome, this.timestamp());
  }

  async operations(clusterId: string, limit = 500): Promise<Operation[]> {
    const result = await this.pool.query<OperationRow>(
      `SELECT ${OPERATION_COLUMNS} FROM operations WHERE cluster_id = $1 ORDER BY id DESC LIMIT $2`,
      [clusterId, limit],
    );
    return result.rows.map(operationFromRow);
  }

  async fingerprint(key: string): Promise<GuardFingerprint | undefined> {
    const result = await this.pool.query<{ parts_json: string }>("SELECT parts_json FROM guard_fingerprints WHERE cluster_id = $1", [key]);
    const row = result.rows[0];
    return row && fingerprintOfJson(row.parts_json);
  }
}

async function startOperation(
  db: Queryable,
  operation: { clusterId: string; shard: string; kind: OperationKind; nodes: readonly string[]; at: string },
): Promise<number> {
  const result = await db.query<{ id: number }>(
    "INSERT INTO operations (cluster_id, shard, kind, started_at, result, nodes_json) VALUES ($1, $2, $3, $4, 'running', $5) RETURNING id",
    [operation.clusterId, operation.shard, operation.kind, operation.at, JSON.stringify(operation.nodes)],
  );
  return result.rows[0]!.id;
}

async function finishOperation(db: Queryable, id: number, outcome: OperationOutcome, at: string): Promise<void> {
  await db.query("UPDATE operations SET finished_at = $1, result = $2, summary_json = $3, error = $4, details_json = $5 WHERE id = $6", [
    at,
    ...finishedColumns(outcome),
    id,
  ]);
}

/** Waits for the advisory lock `key` on `client`, in waits the replica's stop can end; false when it stopped first. */
async function waitForLock(client: PoolClient, key: readonly unknown[], stopping: () => boolean): Promise<boolean> {
  await client.query(`SET lock_timeout = ${RUN_LOCK_WAIT_MS}`);
  try {
    for (;;) {
      try {
        await client.query("SELECT pg_advisory_lock($1, hashtext($2))", key as unknown[]);
        return true;
      } catch (error) {
        if ((error as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw error;
        if (stopping()) return false;
      }
    }
  } finally {
    // The connection goes back to the pool: the run's other statements keep the default.
    await client.query("RESET lock_timeout");
  }
}
