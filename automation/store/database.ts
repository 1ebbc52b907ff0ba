/**
 * The service's embedded store: `<dataDir>/nodefleet.db` (SQLite through better-sqlite3), WAL whose
 * commits are fsynced before anyone is told (walSync.ts), so a committed request survives kill -9
 * and power loss, exclusive locking mode
 * so no second process can open it while this one runs, and numbered migrations tracked in
 * `PRAGMA user_version`.
 */
import Database from "better-sqlite3";
import * as fs from "node:fs";
import * as path from "node:path";
import { StoreDamagedError, assertIntact, assertStoreNotLost, isDamage } from "./storeIntegrity";
import { walSyncOf } from "./walSync";

export type Db = Database.Database;

/** The store's connection: closing it also closes the descriptor its WAL is synced through (walSync.ts). */
class StoreDatabase extends Database {
  override close(): this {
    walSyncOf(this).close();
    return super.close();
  }
}

/** Append-only: released databases have run the earlier entries. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE claims (
     node_id TEXT NOT NULL,
     cluster_id TEXT NOT NULL,
     unique_id TEXT NOT NULL,
     request_hash TEXT NOT NULL,
     request_json TEXT NOT NULL,
     pool TEXT NOT NULL,
     instance_type TEXT NOT NULL,
     zone TEXT NOT NULL,
     snapshot_json TEXT NOT NULL,
     status TEXT NOT NULL CHECK (status IN ('PENDING','PROVISIONING','RUNNING','FAILED','TERMINATING','GONE')),
     failure_code TEXT,
     failure_reason TEXT,
     instance_id TEXT,
     ipv4 TEXT,
     private_ipv4 TEXT,
     cpu_millis INTEGER NOT NULL,
     memory_mib INTEGER NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     delete_requested_at TEXT,
     gone_at TEXT,
     PRIMARY KEY (cluster_id, node_id),
     UNIQUE (cluster_id, unique_id)
   );
   CREATE INDEX claims_by_status ON claims (cluster_id, status);
   CREATE TABLE operations (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     cluster_id TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (kind IN ('up','refresh','preview')),
     started_at TEXT NOT NULL,
     finished_at TEXT,
     result TEXT NOT NULL CHECK (result IN ('running','succeeded','failed','abandoned')),
     summary_json TEXT,
     nodes_json TEXT NOT NULL,
     error TEXT,
     details_json TEXT
   );
   CREATE INDEX operations_by_cluster ON operations (cluster_id, id);`,
  // Admission reads a pool's usage and placement slots on every create: from a covering index,
  // without reading rows or decoding snapshots.
  `ALTER TABLE claims ADD COLUMN placement_slot INTEGER;
   UPDATE claims SET placement_slot = json_extract(snapshot_json, '$.placementSlot');
   CREATE INDEX claims_by_pool ON claims (cluster_id, pool, status, placement_slot, cpu_millis, memory_mib);`,
  // The preview guard's fingerprint of each cluster's API stack after its last successful up
  // (reconciler/guardFingerprint.ts): one row a cluster, its parts as JSON.
  `CREATE TABLE guard_fingerprints (
     cluster_id TEXT PRIMARY KEY,
     parts_json TEXT NOT NULL,
     recorded_at TEXT NOT NULL
   );`,
  // What registered Nodes reported per server type, image and kubelet settings (store/learnedCapacities.ts):
  // the smallest capacity and allocatable seen, each field apart, in millicores, MiB and pods.
  `CREATE TABLE learned_capacities (
     cluster_id TEXT NOT NULL,
     server_type TEXT NOT NULL,
     image TEXT NOT NULL,
     kubelet TEXT NOT NULL,
     capacity_cpu_millis INTEGER NOT NULL,
     capacity_memory_mib INTEGER NOT NULL,
     capacity_pods INTEGER NOT NULL,
     capacity_ephemeral_storage_mib INTEGER NOT NULL,
     allocatable_cpu_millis INTEGER NOT NULL,
     allocatable_memory_mib INTEGER NOT NULL,
     allocatable_pods INTEGER NOT NULL,
     allocatable_ephemeral_storage_mib INTEGER NOT NULL,
     first_node TEXT NOT NULL,
     learned_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (cluster_id, server_type, image, kubelet)
   );`,
];

export function databasePath(dataDir: string): string {
  return path.join(dataDir, "nodefleet.db");
}

/** The database file and its WAL/shared-memory companions. */
export function databaseFiles(dataDir: string): string[] {
  const file = databasePath(dataDir);
  return [file, `${file}-wal`, `${file}-shm`];
}

/**
 * The database holds cluster and node details, so like the other files of the data directory it is
 * 0600. SQLite creates its -wal/-shm files with the database file's mode, so creating that file
 * 0600 first covers them; the chmod afterwards also tightens files an older version created 0644.
 */
function restrictDatabaseFiles(dataDir: string): void {
  for (const file of databaseFiles(dataDir)) {
    try {
      fs.chmodSync(file, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
}

export interface OpenOptions {
  /**
   * The files in which the engine holds the API stack's state (engine/engineState.ts
   * `engineStateOf`): while there are any, the store must not be missing or empty.
   */
  readonly engineState?: () => readonly string[];
}

/**
 * Opens (or creates) the store: refuses a lost store (missing or empty next to the engine state
 * `engineState` lists) and a damaged one (integrity check of every page) with an error naming the file.
 */
export function openDatabase(dataDir: string, options: OpenOptions = {}): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (options.engineState) assertStoreNotLost(databasePath(dataDir), options.engineState);
  // Create (never truncate) the file 0600 before SQLite does it with 0644.
  fs.closeSync(fs.openSync(databasePath(dataDir), "a", 0o600));
  const db: Db = new StoreDatabase(databasePath(dataDir), { timeout: 1000 });
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = WAL");
    // Commits are made durable by an explicit fsync of the WAL (walSync.ts): after each of the
    // store's own transactions, and once per group of client writes (groupCommit.ts).
    db.pragma("synchronous = NORMAL");
    // The group commit checkpoints off the event loop (walSync.ts); SQLite's own checkpoint, inside
    // a COMMIT with both fsyncs on the event loop, is only the backstop for a WAL grown large anyway.
    db.pragma("wal_autocheckpoint = 10000");
    db.pragma("foreign_keys = ON");
    assertIntact(db, databasePath(dataDir));
    migrate(db);
    walSyncOf(db).syncNow();
    syncDirectory(dataDir);
    restrictDatabaseFiles(dataDir);
  } catch (error) {
    db.close();
    if (isDamage(error)) throw new StoreDamagedError(databasePath(dataDir), [(error as Error).message]);
    if ((error as { code?: string }).code === "SQLITE_BUSY") {
      throw new Error(`database ${databasePath(dataDir)} is locked by another process; one nodefleet service per data directory`);
    }
    throw error;
  }
  return db;
}

/** The directory entries of the database and its WAL survive a power loss. */
function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function migrate(db: Db): void {
  const version = db.pragma("user_version", { simple: true }) as number;
  if (version > MIGRATIONS.length) {
    throw new Error(`database schema version ${version} is newer than this nodefleet (knows ${MIGRATIONS.length}); upgrade nodefleet`);
  }
  // BEGIN IMMEDIATE takes the write lock even when there is nothing to migrate: in exclusive mode it is then held until close.
  db.transaction(() => {
    for (let v = version; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}
