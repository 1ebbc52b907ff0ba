/**
 * Group commit: write functions submitted while the previous group's WAL sync runs (or, with none
 * running, in the same turn of the event loop) run in one IMMEDIATE transaction, a savepoint each
 * (one that throws rolls back and rejects alone), commit once and share one WAL sync on libuv's
 * thread pool (walSync.ts). Every submitter is answered only after the sync covering its commit, so
 * what it was told is durable. A failed COMMIT rejects its group; a failed sync rejects its group and
 * every later write (StoreSyncFailedError). Why groups grow on a slow disk, and the checkpoints
 * between groups: automation/README.md (The store's durability).
 */
import type { Statement } from "better-sqlite3";
import type { Db } from "./database";
import { walSyncOf, type WalSync } from "./walSync";

interface Waiter {
  readonly answer: () => void;
  readonly fail: (error: unknown) => void;
}

interface Pending {
  readonly fn: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

export interface GroupCommitOptions {
  /** Writes between checkpoints (default 1000: about SQLite's own 1000 pages at the usual group sizes). */
  readonly checkpointEveryWrites?: number;
}

export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private groups = 0;
  private writes = 0;
  private syncs = 0;
  private checkpoints = 0;
  private writesSinceCheckpoint = 0;
  private checkpointing = false;
  private readonly checkpointEveryWrites: number;
  private readonly wal: WalSync;
  /** Committed, waiting for the next sync (the store's own transactions sync at once: normally none). */
  private undurable: Waiter[] = [];
  /** Covered by the sync in flight, if one is. */
  private syncingFor: Waiter[] | undefined;

  // Each write's savepoint, prepared once (better-sqlite3's nested db.transaction() would build a wrapper per write).
  private readonly savepoint: Statement;
  private readonly release: Statement;
  private readonly rollbackTo: Statement;

  constructor(
    private readonly db: Db,
    options: GroupCommitOptions = {},
  ) {
    this.wal = walSyncOf(db);
    this.checkpointEveryWrites = options.checkpointEveryWrites ?? 1000;
    this.savepoint = db.prepare("SAVEPOINT group_write");
    this.release = db.prepare("RELEASE group_write");
    this.rollbackTo = db.prepare("ROLLBACK TO group_write");
  }

  /**
   * Resolves once everything committed before the call is durable, so that no answer reports data
   * a crash could still take back (a replay of a fresh create, a read); rejects when that fsync
   * fails. Waits for no commit of its own: the fsync in flight when nothing was committed since it
   * started, else the next one.
   */
  durable(): Promise<void> {
    if (this.wal.failed) return Promise.reject(this.wal.failed);
    const covering = this.undurable.length > 0 ? this.undurable : this.syncingFor;
    if (!covering) return Promise.resolve();
    return new Promise<void>((answer, fail) => covering.push({ answer, fail }));
  }

  /** Runs fn inside the next group's transaction; resolves with its result once the group is committed. */
  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** The next group closes at the next check phase, unless a sync or a checkpoint is in flight (its return schedules it). */
  private schedule(): void {
    if (this.scheduled || this.syncingFor || this.checkpointing || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  /** Commits (groups), writes and WAL fsyncs so far. */
  get stats(): { groups: number; writes: number; syncs: number } {
    return { groups: this.groups, writes: this.writes, syncs: this.syncs };
  }

  /** Checkpoints made so far (startCheckpoint). */
  get checkpointCount(): number {
    return this.checkpoints;
  }

  /** Checkpoints when enough was written and every commit is synced; the next group waits for its database-file sync. */
  private startCheckpoint(): void {
    if (this.writesSinceCheckpoint < this.checkpointEveryWrites || this.syncingFor || this.undurable.length > 0 || this.checkpointing)
      return;
    let synced: Promise<void>;
    try {
      synced = this.wal.checkpoint();
    } catch {
      // The copy failed (SQLite keeps the WAL as it was): the next group's COMMIT reports a store that cannot write.
      return;
    }
    this.writesSinceCheckpoint = 0;
    this.checkpoints += 1;
    this.checkpointing = true;
    synced
      // A failed sync fails the store (WalSync): the next write is refused with it.
      .catch(() => undefined)
      .finally(() => {
        this.checkpointing = false;
        this.schedule();
      });
  }

  private startSync(): void {
    if (this.syncingFor || this.undurable.length === 0) return;
    const covered = this.undurable;
    this.syncingFor = covered;
    this.undurable = [];
    this.syncs += 1;
    this.wal.sync().then(
      () => {
        this.syncingFor = undefined;
        for (const waiter of covered) waiter.answer();
        this.startSync();
        this.startCheckpoint();
        this.schedule();
      },
      (error: unknown) => {
        this.syncingFor = undefined;
        for (const waiter of covered) waiter.fail(error);
        this.startSync();
        this.schedule();
      },
    );
  }

  private flush(): void {
    this.scheduled = false;
    if (this.syncingFor || this.checkpointing) return;
    const group = this.queue;
    this.queue = [];
    if (group.length === 0) return;
    const outcomes: Outcome[] = [];
    try {
      this.wal.beforeWrite();
      this.db
        .transaction(() => {
          for (const pending of group) {
            this.savepoint.run();
            try {
              outcomes.push({ ok: true, value: pending.fn() });
              this.release.run();
            } catch (error) {
              // SQLite rolled the whole transaction back by itself (an I/O error): nothing of the group may be kept.
              if (!this.db.inTransaction) throw error;
              this.rollbackTo.run();
              this.release.run();
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
    } catch (error) {
      for (const pending of group) pending.reject(error);
      return;
    }
    this.groups += 1;
    this.writes += group.length;
    this.writesSinceCheckpoint += group.length;
    this.undurable.push({
      answer: () =>
        group.forEach((pending, i) => {
          const outcome = outcomes[i]!;
          if (outcome.ok) pending.resolve(outcome.value);
          else pending.reject(outcome.error);
        }),
      fail: (error) => group.forEach((pending) => pending.reject(error)),
    });
    this.startSync();
  }
}
