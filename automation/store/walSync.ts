/**
 * Durability of the store's commits, made explicit. The connection runs WAL with
 * synchronous=NORMAL and the store fdatasyncs the WAL file itself after committing: right away for
 * the reconciler's own transactions, or once per group of client writes on libuv's thread pool
 * (groupCommit.ts), so the event loop keeps admitting the next group while the disk syncs. It also
 * checkpoints between groups, off the event loop, instead of inside a COMMIT. Why, and what the
 * next write waits for: automation/README.md (The store's durability).
 */
import * as fs from "node:fs";
import type Database from "better-sqlite3";
import { errorMessage } from "../../components/shared/errorMessage";

/**
 * A sync of the store's files failed. After that, what reached the disk is unknown: Linux may drop
 * the dirty pages of a failed fsync and report the next one clean, so a retry proves nothing. Every
 * later write and durable read fails with this error until the service restarts and SQLite recovers
 * from what is on disk (PostgreSQL stops for the same reason).
 */
export class StoreSyncFailedError extends Error {
  override readonly name = "StoreSyncFailedError";
  readonly code = "NODEFLEET_SYNC_FAILED";
  constructor(readonly syncError: unknown) {
    const code = (syncError as { code?: unknown } | undefined)?.code;
    super(
      `a sync of the store's files failed (${typeof code === "string" ? code : errorMessage(syncError)}): what reached the disk is unknown until the service restarts and recovers from it`,
    );
  }
}

export class WalSync {
  private fd: number | undefined;
  private databaseFd: number | undefined;
  /** Syncs on the thread pool not yet returned: the descriptors are closed only after them. */
  private inFlight = 0;
  private closeWhenIdle = false;
  /** A checkpoint copied pages into the database file that are not known to be on disk yet. */
  private copiedUnsynced = false;
  /** Something may have been written to the WAL since the last sync started (beforeWrite() was called). */
  private walUnsynced = false;
  /** The first failed sync: from then on nothing is written or reported durable. */
  private failure: StoreSyncFailedError | undefined;
  private readonly failureListeners: Array<(failure: StoreSyncFailedError) => void> = [];

  constructor(
    readonly walPath: string,
    private readonly db?: Database.Database,
  ) {}

  private descriptor(): number {
    if (this.fd === undefined) {
      this.fd = fs.openSync(this.walPath, "r");
      this.closeWhenIdle = false;
    }
    return this.fd;
  }

  private databaseDescriptor(): number {
    if (this.databaseFd === undefined) {
      this.databaseFd = fs.openSync(this.walPath.replace(/-wal$/, ""), "r");
      this.closeWhenIdle = false;
    }
    return this.databaseFd;
  }

  /** A checkpoint's copy waits for its database-file sync: no write may start the WAL over yet. */
  get checkpointUnsynced(): boolean {
    return this.copiedUnsynced;
  }

  /** The failed sync after which the store refuses to write or to report anything durable, if one failed. */
  get failed(): StoreSyncFailedError | undefined {
    return this.failure;
  }

  /** Called once, when a sync first fails (the service stops: only a restart recovers). */
  onFailure(listener: (failure: StoreSyncFailedError) => void): void {
    this.failureListeners.push(listener);
  }

  private fail(error: unknown): StoreSyncFailedError {
    if (!this.failure) {
      this.failure = new StoreSyncFailedError(error);
      for (const listener of this.failureListeners) listener(this.failure);
    }
    return this.failure;
  }

  /** Blocks until everything committed so far is on disk. */
  syncNow(): void {
    if (this.failure) throw this.failure;
    this.walUnsynced = false;
    try {
      fs.fdatasyncSync(this.descriptor());
    } catch (error) {
      this.walUnsynced = true;
      throw this.fail(error);
    }
  }

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.walUnsynced = false;
    return this.syncOnThreadPool(this.descriptor()).catch((error: unknown) => {
      this.walUnsynced = true;
      throw this.fail(error);
    });
  }

  /** Resolves once the database file's written pages are on disk. */
  syncDatabase(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return this.syncOnThreadPool(this.databaseDescriptor()).catch((error: unknown) => {
      throw this.fail(error);
    });
  }

  private syncOnThreadPool(fd: number): Promise<void> {
    this.inFlight += 1;
    return new Promise<void>((resolve, reject) =>
      fs.fdatasync(fd, (error) => {
        this.inFlight -= 1;
        if (this.closeWhenIdle && this.inFlight === 0) this.close();
        if (error) reject(error);
        else resolve();
      }),
    );
  }

  /**
   * Copies the WAL into the database file without an fsync on the event loop, then syncs the
   * database file on the thread pool; resolves when it is on disk. Called between group commits,
   * when every group is synced; a write since the last sync (an operation-log entry written on its
   * own) is synced here first, as SQLite syncs the WAL before it copies. If the database file's
   * sync fails, the store fails (StoreSyncFailedError) and writes nothing more.
   */
  checkpoint(): Promise<void> {
    const db = this.db!;
    if (this.walUnsynced) this.syncNow();
    db.pragma("synchronous = OFF");
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
    } finally {
      db.pragma("synchronous = NORMAL");
    }
    this.copiedUnsynced = true;
    return this.syncDatabase().then(() => {
      this.copiedUnsynced = false;
    });
  }

  /**
   * Before every write: a checkpoint's copy not yet synced is synced first (on the event loop; the
   * group commit waits for the thread pool's instead), and the WAL is marked as written since its
   * last sync.
   */
  beforeWrite(): void {
    if (this.failure) throw this.failure;
    this.walUnsynced = true;
    if (!this.copiedUnsynced) return;
    try {
      fs.fdatasyncSync(this.databaseDescriptor());
    } catch (error) {
      throw this.fail(error);
    }
    this.copiedUnsynced = false;
  }

  /**
   * Runs a write outside the group commit, durable when it returns: the WAL is synced after it. Inside
   * an open transaction nothing is synced here: that transaction's own commit is synced by its owner.
   */
  writeDurably<T>(write: () => T): T {
    if (this.db!.inTransaction) return write();
    this.beforeWrite();
    const result = write();
    this.syncNow();
    return result;
  }

  /** Something written since the last sync started is not known to be on disk. */
  get walUnsyncedWrites(): boolean {
    return this.walUnsynced;
  }

  /** Closes the descriptors (at once, or when the syncs in flight return: their numbers must not be reused under them). */
  close(): void {
    if (this.inFlight > 0) {
      this.closeWhenIdle = true;
      return;
    }
    for (const fd of [this.fd, this.databaseFd]) if (fd !== undefined) fs.closeSync(fd);
    this.fd = this.databaseFd = undefined;
  }
}

const byDatabase = new WeakMap<Database.Database, WalSync>();

/** The one WalSync of a connection (its file is `<database>-wal`). */
export function walSyncOf(db: Database.Database): WalSync {
  let sync = byDatabase.get(db);
  if (!sync) {
    sync = new WalSync(`${db.name}-wal`, db);
    byDatabase.set(db, sync);
  }
  return sync;
}
