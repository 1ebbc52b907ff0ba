/**
 * Pulumi processes the engine's runs left behind. The CLI starts its plugins (providers, the
 * dynamic-provider host) in process groups of their own, so a SIGKILL of the service with the CLI
 * (they share a group) or of the CLI alone leaves them running, re-parented to init, for good.
 * Every pulumi process the engine starts carries an owner mark in its environment, which its
 * plugins and their children inherit: the data directory (hashed) and the engine process's pid and
 * start time (/proc/<pid>/stat field 22: a reused pid is another owner). Found by that mark, never
 * by name, in /proc/<pid>/environ (readable for processes of the same user, as the plugins are).
 */
import { createHash } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { descendantProcesses, parentPid, processIds, processStartTime } from "./cliProcesses";

/** The environment variable holding the mark (set by the engine, read from /proc; not a setting). */
export const OWNER_MARK = "NODEFLEET_ENGINE_OWNER";

export interface EngineOwner {
  /** The data directory's key (see dataDirKey). */
  readonly dir: string;
  readonly pid: number;
  readonly startTime: string;
}

export interface MarkedProcess {
  readonly pid: number;
  /** Its start time when it was found: it is signalled only while that still holds. */
  readonly startTime: string;
  readonly owner: EngineOwner;
}

/** A short key of the data directory's real path: the mark names the directory without spelling out a path. */
export function dataDirKey(dataDir: string): string {
  return createHash("sha256").update(realpathSync(dataDir)).digest("hex").slice(0, 16);
}

/** The mark of an engine in `pid` (default: this process) working on `dataDir`. */
export function ownerMark(dataDir: string, pid = process.pid): string {
  // Without /proc (not Linux) nothing is found by the mark either, so its start time does not matter.
  return `${dataDirKey(dataDir)}:${pid}:${processStartTime(pid) ?? 0}`;
}

function parseOwnerMark(value: string): EngineOwner | undefined {
  const match = /^([0-9a-f]{16}):(\d+):(\d+)$/.exec(value);
  return match ? { dir: match[1]!, pid: Number(match[2]), startTime: match[3]! } : undefined;
}

/** The owner still runs: its pid is alive with the start time the mark recorded. */
function ownerAlive(owner: EngineOwner): boolean {
  return processStartTime(owner.pid) === owner.startTime;
}

function markOf(pid: number): EngineOwner | undefined {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, "utf8");
  } catch {
    return undefined; // gone, or another user's
  }
  const entry = environ.split("\0").find((e) => e.startsWith(`${OWNER_MARK}=`));
  return entry ? parseOwnerMark(entry.slice(OWNER_MARK.length + 1)) : undefined;
}

/** This process and its ancestors: never stopped, whatever their environment says. */
function selfAndAncestors(): Set<number> {
  const spared = new Set<number>([process.pid]);
  for (let pid: number | undefined = process.ppid; pid !== undefined && pid > 1 && !spared.has(pid); pid = parentPid(pid)) spared.add(pid);
  return spared;
}

/** Every process carrying an owner mark, but this process and its ancestors. */
function markedProcesses(): MarkedProcess[] {
  const spared = selfAndAncestors();
  const found: MarkedProcess[] = [];
  for (const pid of processIds()) {
    if (spared.has(pid)) continue;
    const startTime = processStartTime(pid);
    const owner = startTime === undefined ? undefined : markOf(pid);
    // The start time again: the environment read must be of the process the start time names.
    if (owner && processStartTime(pid) === startTime) found.push({ pid, startTime: startTime!, owner });
  }
  return found;
}

/**
 * SIGKILLs each process whose start time is still the one it was found with (a pid reused since is
 * left alone), then waits, at most `waitMs`, until they are gone, so a stack lock they held reads as
 * stale. Returns those signalled.
 */
export async function stopProcesses(processes: readonly MarkedProcess[], waitMs = 5000): Promise<MarkedProcess[]> {
  const signalled: MarkedProcess[] = [];
  for (const found of processes) {
    if (processStartTime(found.pid) !== found.startTime) continue;
    try {
      process.kill(found.pid, "SIGKILL");
      signalled.push(found);
    } catch {
      // gone meanwhile
    }
  }
  for (const deadline = Date.now() + waitMs; Date.now() < deadline; await sleep(50)) {
    if (signalled.every((p) => processStartTime(p.pid) !== p.startTime)) break;
  }
  return signalled;
}

/**
 * At an engine's start: the processes of earlier engines on `dataDir` whose engine no longer runs
 * (a live one, a `nodefleet preview` say, keeps its own).
 */
export function leftoversOfEndedEngines(dataDir: string): MarkedProcess[] {
  const dir = dataDirKey(dataDir);
  return markedProcesses().filter((p) => p.owner.dir === dir && !ownerAlive(p.owner));
}

/**
 * After a run: this engine's processes no longer below it, i.e. left by a CLI that died (every live
 * CLI, of any stack, is this process's child and keeps its plugins below it).
 */
export function orphansOf(mark: string): MarkedProcess[] {
  const owner = parseOwnerMark(mark);
  if (!owner) return [];
  const below = new Set(descendantProcesses(process.pid));
  return markedProcesses().filter(
    (p) => p.owner.dir === owner.dir && p.owner.pid === owner.pid && p.owner.startTime === owner.startTime && !below.has(p.pid),
  );
}
