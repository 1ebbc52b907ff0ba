/**
 * Durability of the store's commits, made explicit. The connection runs WAL with synchronous=NORMAL
 * (a COMMIT writes its WAL frames but does not fsync them) and the store fsyncs the WAL file itself
 * after committing: right away for the reconciler's own transactions (the same guarantee as
 * synchronous=FULL), or once per group of client writes on libuv's thread pool (groupCommit.ts), so
 * the event loop keeps admitting the next group while the disk syncs the last one. fsync flushes
 * every written page of the file, whichever descriptor wrote it; in exclusive locking mode the WAL
 * file lives as long as the connection (a descriptor is opened per sync, so none outlives it).
 */
import * as fs from "node:fs";
import type Database from "better-sqlite3";

export class WalSync {
  constructor(readonly walPath: string) {}

  /** Blocks until everything committed so far is on disk. */
  syncNow(): void {
    const fd = fs.openSync(this.walPath, "r");
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Resolves once everything committed before the call is on disk. */
  async sync(): Promise<void> {
    const handle = await fs.promises.open(this.walPath, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
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
