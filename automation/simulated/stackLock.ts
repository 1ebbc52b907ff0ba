/**
 * A per-stack lock file for the simulated cloud, like the Pulumi file backend's lock: a second
 * writer is refused while the holder lives; a lock whose holder process is dead (a crash) is
 * removed by the next run, as `pulumi cancel` would.
 */
import { openSync, readFileSync, rmSync, writeSync, closeSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { processAlive } from "../engine/cliProcesses";
import { assertStackName, simulatedCloudDir } from "./simulatedCloud";

export interface LockInfo {
  readonly pid: number;
  readonly startedAt: string;
}

export function stackLockPath(dataDir: string, stack: string): string {
  assertStackName(stack);
  return join(simulatedCloudDir(dataDir), "stacks", `${stack}.lock`);
}

export function readLock(path: string): LockInfo | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as LockInfo;
  } catch {
    return undefined;
  }
}

export interface AcquiredLock {
  /** Set when a dead holder's lock was removed first. */
  readonly staleHolder?: LockInfo;
  release(): void;
}

/** Takes the lock for `pid`, or throws naming the live holder. */
export function acquireStackLock(dataDir: string, stack: string, pid: number = process.pid): AcquiredLock {
  const path = stackLockPath(dataDir, stack);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let staleHolder: LockInfo | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, JSON.stringify({ pid, startedAt: new Date().toISOString() } satisfies LockInfo));
      closeSync(fd);
      return {
        staleHolder,
        release: () => {
          if (readLock(path)?.pid === pid) rmSync(path, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readLock(path);
      if (holder && processAlive(holder.pid) && holder.pid !== pid) {
        throw new Error(`the stack is currently locked by process ${holder.pid} since ${holder.startedAt} (simulated engine)`);
      }
      staleHolder = holder;
      rmSync(path, { force: true });
    }
  }
  throw new Error(`could not take the lock of stack ${stack}`);
}

/** Removes the lock if `pid` holds it (the parent cleans up after a child it killed). */
export function releaseLockOf(dataDir: string, stack: string, pid: number): void {
  const path = stackLockPath(dataDir, stack);
  if (readLock(path)?.pid === pid) rmSync(path, { force: true });
}
