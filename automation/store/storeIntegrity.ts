/**
 * The store is the only record of which servers the API created. Two ways it can silently lie:
 * - lost: `nodefleet.db` missing or empty while the engine holds state for the API stack, or while
 *   the cloud holds servers of the autoscaled pools (reconciler/storeLostInCloud.ts). Started that way, it
 *   would answer 404 NodeNotFound (Karpenter reads "instance gone") for servers that exist, and the
 *   orphan reclaimer would delete them: the service refuses to start and says how to restore.
 * - damaged: a corrupted page is otherwise found only when a request touches it; the whole file is
 *   checked at start (PRAGMA quick_check) and damage is reported with the file.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type Database from "better-sqlite3";

type Db = Database.Database;

export class StoreLostError extends Error {
  override readonly name = "StoreLostError";
  /** `evidence`: what shows the store had records, e.g. "the engine holds state for the servers it recorded (<files>)". */
  constructor(
    readonly file: string,
    readonly evidence: string,
  ) {
    super(
      `the store ${file} is ${fs.existsSync(file) ? "empty" : "missing"}, but ${evidence}; starting with an empty store would report those servers as gone. ` +
        `Restore ${path.basename(file)} (with its -wal file, if any) from a backup into ${path.dirname(file)}; ` +
        "to give those servers up deliberately, delete them and the API stack's engine state first",
    );
  }
}

export class StoreDamagedError extends Error {
  override readonly name = "StoreDamagedError";
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(
      `the store ${file} is damaged (${problems.slice(0, 5).join("; ")}${problems.length > 5 ? `; and ${problems.length - 5} more` : ""}); ` +
        `stop the service and restore ${path.basename(file)} from a backup (or try \`sqlite3 ${file} .recover\` into a new file)`,
    );
  }
}

/** The database file does not exist or holds nothing: a first start, or a lost store. */
export function storeMissingOrEmpty(file: string): boolean {
  try {
    return fs.statSync(file).size === 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return true;
  }
}

/**
 * Throws StoreLostError when the database file is missing or empty while the engine holds state for
 * the servers the store recorded: `engineState` lists its files (engine/engineState.ts
 * `engineStateOf`, the API stack's), asked only when the file is missing or empty.
 */
export function assertStoreNotLost(file: string, engineState: () => readonly string[]): void {
  if (!storeMissingOrEmpty(file)) return;
  const state = engineState();
  if (state.length > 0) throw new StoreLostError(file, `the engine holds state for the servers it recorded (${state.join(", ")})`);
}

const DAMAGE_CODES = new Set(["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CORRUPT_INDEX", "SQLITE_CORRUPT_SEQUENCE", "SQLITE_CORRUPT_VTAB"]);

export function isDamage(error: unknown): boolean {
  return DAMAGE_CODES.has((error as { code?: string }).code ?? "");
}

/** Reads every page of the database; throws StoreDamagedError listing what SQLite found. */
export function assertIntact(db: Db, file: string): void {
  let rows: Array<Record<string, unknown>>;
  try {
    rows = db.pragma("quick_check") as Array<Record<string, unknown>>;
  } catch (error) {
    if (isDamage(error)) throw new StoreDamagedError(file, [(error as Error).message]);
    throw error;
  }
  const problems = rows.map((row) => String(Object.values(row)[0]));
  if (problems.length !== 1 || problems[0] !== "ok") throw new StoreDamagedError(file, problems);
}
