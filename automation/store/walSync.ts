/**
 * Durability of the store's commits, made explicit. The connection runs WAL with synchronous=NORMAL
 * (a COMMIT writes its WAL frames but does not sync them) and the store syncs the WAL file itself
 * after committing: right away for the reconciler's own transactions (the same guarantee as
 * synchronous=FULL), or once per group of client writes on libuv's thread pool (groupCommit.ts), so
 * the event loop keeps admitting the next group while the disk syncs the last one.
 *
 * fdatasync, as SQLite's own synchronous=FULL uses on Linux: it flushes the written pages and the
 * metadata needed to read them back (the file's size), not timestamps. In exclusive locking mode the
 * WAL file lives as long as the connection, so one descriptor is opened at the first sync and kept
 * until the database closes (StoreDatabase.close): a sync is one thread-pool job, not an open, a
 * sync and a close each waiting for a turn of a busy event loop.
 */
import * as fs from "node:fs";
import type Database from "better-sqlite3";

export class WalSync {
  private fd: number | undefined;
  /** Syncs on the thread pool not yet returned: the descriptor is closed only after them. */
  private inFlight = 0;
  private closeWhenIdle = false;

  constructor(readonly walPath: string) {}

  private descriptor(): number {
    if (this.fd === undefined) {
      this.fd = fs.openSync(this.walPath, "r");
      this.closeWhenIdle = false;
    }
    return this.fd;
  }

  /** Blocks until everything committed so far is on disk. */
  syncNow(): void {
    fs.fdatasyncSync(this.descriptor());
  }

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    const fd = this.descriptor();
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

  /** Closes the descriptor (at once, or when the syncs in flight return: its number must not be reused under them). */
  close(): void {
    if (this.fd === undefined) return;
    if (this.inFlight > 0) {
      this.closeWhenIdle = true;
      return;
    }
    fs.closeSync(this.fd);
    this.fd = undefined;
  }
}

const byDatabase = new WeakMap<Database.Database, WalSync>();

/** The one WalSync of a connection (its file is `<database>-wal`). */
export function walSyncOf(db: Database.Database): WalSync {
  let sync = byDatabase.get(db);
  if (!sync) {
    sync = new WalSync(`${db.name}-wal`);
    byDatabase.set(db, sync);
  }
  return sync;
}
