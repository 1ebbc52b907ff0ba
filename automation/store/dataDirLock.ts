/**
 * One service instance per data directory. A lock file records who holds the directory (pid,
 * host, start time) so a second instance can say why it refuses to start; a lock left by a dead
 * process (kill -9, power loss) is taken over, so the service also starts right after an unclean
 * stop. The SQLite database is additionally opened in exclusive locking mode (see database.ts),
 * an OS-level lock that dies with its process, so two instances can never write at once even if
 * the lock file were removed by hand.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export interface LockOwner {
  readonly pid: number;
  readonly hostname: string;
  readonly startedAt: string;
}

export class DataDirLockedError extends Error {
  override readonly name = "DataDirLockedError";
  constructor(
    readonly dataDir: string,
    readonly owner: LockOwner,
  ) {
    super(
      `data directory ${dataDir} is in use by another nodefleet service (pid ${owner.pid} on ${owner.hostname}, started ${owner.startedAt}); ` +
        "stop that instance or start this one with another --data-dir",
    );
  }
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(fs.readFileSync(file, "utf8")) as LockOwner;
    return typeof owner.pid === "number" ? owner : undefined;
  } catch {
    return undefined;
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** Lock files this process holds, so a second service in the same process is refused too. */
const heldHere = new Map<string, LockOwner>();

export function acquireDataDirLock(dataDir: string): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(fs.realpathSync(dataDir), "nodefleet.lock");
  const held = heldHere.get(file);
  if (held) throw new DataDirLockedError(dataDir, held);
  const owner: LockOwner = { pid: process.pid, hostname: os.hostname(), startedAt: new Date().toISOString() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(owner), { flag: "wx", mode: 0o600 });
      let released = false;
      heldHere.set(file, owner);
      return {
        file,
        release() {
          if (released) return;
          released = true;
          heldHere.delete(file);
          if (readOwner(file)?.pid === process.pid) fs.rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const current = readOwner(file);
      const sameHost = current?.hostname === os.hostname();
      if (current && current.pid !== process.pid && (!sameHost || isProcessAlive(current.pid))) {
        throw new DataDirLockedError(dataDir, current);
      }
      // Stale (dead owner, unreadable or our own leftover): remove it and try again.
      fs.rmSync(file, { force: true });
    }
  }
  throw new Error(`could not lock data directory ${dataDir}: the lock file ${file} keeps reappearing`);
}
