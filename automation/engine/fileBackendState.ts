/**
 * What the engine reads of Pulumi's self-managed file backend without starting a CLI process:
 * the stack's lock files (`.pulumi/locks/organization/<project>/<stack>/<id>.json`, written by the
 * CLI with its pid and hostname) and the pending operations of the stack's checkpoint
 * (`.pulumi/stacks/<project>/<stack>.json`). Layout: pkg/backend/diy (lock.go, state.go) of the CLI.
 * It also repairs what a kill can tear: the blob library under the backend (gocloud fileblob) writes
 * each file's `.attrs` sidecar in place, not by rename, so a CLI killed mid-write leaves an empty
 * sidecar on which every later command fails ("failed to load checkpoint: EOF").
 */
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { processAlive } from "./cliProcesses";

/** The local directory of a `file://` backend URL; undefined for other backends. */
export function fileBackendDir(backendUrl: string): string | undefined {
  if (!backendUrl.startsWith("file://")) return undefined;
  const withoutQuery = backendUrl.split("?")[0]!;
  return withoutQuery.startsWith("file:///") ? fileURLToPath(withoutQuery) : withoutQuery.slice("file://".length);
}

/** The options that mark a file backend URL as made by fileBackendUrl. */
const OWN_BACKEND_OPTIONS = "?metadata=skip";

/**
 * The file backend URL nodefleet uses for a directory: `metadata=skip` tells fileblob to write no
 * sidecars at all (Pulumi's state carries no blob metadata), so none can be torn.
 */
export function fileBackendUrl(dir: string): string {
  return `file://${dir}${OWN_BACKEND_OPTIONS}`;
}

const SIDECAR = ".attrs";

/** Sidecars under the stacks and locks of the backend that do not parse, i.e. were torn by a kill. */
function tornSidecars(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (!name.endsWith(SIDECAR)) return statSync(path, { throwIfNoEntry: false })?.isDirectory() ? tornSidecars(path) : [];
    try {
      JSON.parse(readFileSync(path, "utf8"));
      return [];
    } catch {
      return [path];
    }
  });
}

/**
 * Removes torn `.attrs` sidecars of the stacks and locks; fileblob reads a missing sidecar as "no
 * metadata", which is all Pulumi ever wrote there. Returns the removed paths.
 */
export function removeTornSidecars(backendDir: string): string[] {
  const torn = ["stacks", "locks"].flatMap((sub) => tornSidecars(join(backendDir, ".pulumi", sub)));
  for (const path of torn) rmSync(path, { force: true });
  return torn;
}

export interface StackLock {
  readonly path: string;
  readonly pid: number;
  readonly hostname: string;
  readonly username?: string;
  readonly timestamp?: string;
}

export function stackLocks(backendDir: string, project: string, stack: string): StackLock[] {
  const dir = join(backendDir, ".pulumi", "locks", "organization", project, stack);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const locks: StackLock[] = [];
  for (const name of names) {
    try {
      const content = JSON.parse(readFileSync(join(dir, name), "utf8")) as Omit<StackLock, "path">;
      locks.push({ ...content, path: join(dir, name) });
    } catch {
      // A lock being written right now: not ours to judge.
    }
  }
  return locks;
}

/**
 * A lock is stale when it was taken on this machine by a process that no longer runs. `fenced`: the
 * caller holds a lock that every run of the stack takes first, anywhere (serve's shared mode: the
 * shard's PostgreSQL run lock, released when its holder dies), so no other run of the stack is live
 * and another machine's lock is stale too; a live process of this machine keeps its lock still.
 */
export function lockIsStale(lock: Pick<StackLock, "pid" | "hostname">, host = hostname(), fenced = false): boolean {
  return lock.hostname === host ? !processAlive(lock.pid) : fenced;
}

/** Removes the stack's stale locks, never a live process's; returns the removed ones. */
export function removeStaleLocks(backendDir: string, project: string, stack: string): StackLock[] {
  const stale = stackLocks(backendDir, project, stack).filter((lock) => lockIsStale(lock));
  for (const lock of stale) rmSync(lock.path, { force: true });
  return stale;
}

export interface PendingOperation {
  readonly type: string;
  readonly resource: {
    readonly urn: string;
    readonly type: string;
    readonly custom?: boolean;
    readonly id?: string;
    readonly inputs?: Record<string, unknown>;
    readonly outputs?: Record<string, unknown>;
    readonly [key: string]: unknown;
  };
}

/** A stack's checkpoint file in a file backend. */
export function stackCheckpointPath(backendDir: string, project: string, stack: string): string {
  return join(backendDir, ".pulumi", "stacks", project, `${stack}.json`);
}

/** The checkpoint files a file backend holds for `stack`, under whichever projects it has. */
export function stackCheckpointFiles(backendDir: string, stack: string): string[] {
  let projects: string[];
  try {
    projects = readdirSync(join(backendDir, ".pulumi", "stacks"));
  } catch {
    return [];
  }
  return projects.map((project) => stackCheckpointPath(backendDir, project, stack)).filter((file) => existsSync(file));
}

/** The pending operations recorded in the stack's checkpoint (empty when the stack has none yet). */
export function pendingOperations(backendDir: string, project: string, stack: string): PendingOperation[] {
  let raw: string;
  try {
    raw = readFileSync(stackCheckpointPath(backendDir, project, stack), "utf8");
  } catch {
    return [];
  }
  const checkpoint = JSON.parse(raw) as { checkpoint?: { latest?: { pending_operations?: PendingOperation[] } } };
  return checkpoint.checkpoint?.latest?.pending_operations ?? [];
}

/** A file backend URL made by `fileBackendUrl`: nodefleet's own, so it also prunes its history. */
export function isNodefleetFileBackend(backendUrl: string): boolean {
  return backendUrl.startsWith("file://") && backendUrl.endsWith(OWN_BACKEND_OPTIONS);
}

/** Files of one folder grouped by the update they belong to (the Unix nanoseconds in their names), newest first. */
function filesByUpdate(dir: string): string[][] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const groups = new Map<string, string[]>();
  for (const name of names) {
    const stamp = /(\d{10,})/.exec(name)?.[1];
    if (stamp === undefined) continue;
    groups.set(stamp, [...(groups.get(stamp) ?? []), join(dir, name)]);
  }
  return [...groups.entries()].sort((a, b) => (BigInt(b[0]) > BigInt(a[0]) ? 1 : -1)).map(([, files]) => files);
}

/**
 * Keeps the newest `keep` updates of a stack's history (`.pulumi/history/<project>/<stack>/`: each
 * update's `.history.json` and a `.checkpoint.json` copy of the state) and of its checkpoint
 * backups (`.pulumi/backups/<project>/<stack>/`). The file backend writes a full copy of the state
 * there on every update and never removes one, so a service running an update per batch would fill
 * its disk. Returns how many files it removed.
 */
export function pruneStackHistory(backendDir: string, project: string, stack: string, keep: number): number {
  let removed = 0;
  for (const sub of ["history", "backups"]) {
    for (const files of filesByUpdate(join(backendDir, ".pulumi", sub, project, stack)).slice(keep)) {
      for (const file of files) rmSync(file, { force: true });
      removed += files.length;
    }
  }
  return removed;
}
