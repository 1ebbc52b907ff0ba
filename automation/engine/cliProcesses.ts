/**
 * The pulumi CLI processes this Node process started for one stack, found through /proc (the
 * Automation API does not expose its child processes): used to force-stop a run whose graceful
 * cancellation (SIGINT) did not end it in time. Also the /proc reads the other process look-ups share.
 */
import { readFileSync, readdirSync } from "node:fs";
import { basename } from "node:path";

/** The fields of /proc/<pid>/stat after the command name (field 3, the state, first); undefined once gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

export function parentPid(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : undefined;
}

/**
 * The process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot): with the pid, an
 * identity a reused pid does not share. Undefined when no such process runs, or only its zombie.
 */
export function processStartTime(pid: number): string | undefined {
  const fields = statFields(pid);
  return fields && fields[0] !== "Z" ? fields[19] : undefined;
}

/** The process's group (field 5 of /proc/<pid>/stat). */
export function processGroup(pid: number): number | undefined {
  const fields = statFields(pid);
  return fields ? Number(fields[2]) : undefined;
}

function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

export function processIds(): number[] {
  try {
    return readdirSync("/proc")
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
}

/** Pids of `pulumi ... --stack <stackName>` processes whose parent is `parent` (default: this process). */
export function pulumiProcessesFor(stackName: string, parent = process.pid): number[] {
  const pids: number[] = [];
  for (const pid of processIds()) {
    if (parentPid(pid) !== parent) continue;
    const argv = commandLine(pid);
    if (argv.length === 0 || basename(argv[0]) !== "pulumi") continue;
    const stackIndex = argv.indexOf("--stack");
    if (stackIndex >= 0 && argv[stackIndex + 1] === stackName) pids.push(pid);
  }
  return pids;
}

/** Every process below `pid` (its children, then theirs): a CLI's language host and plugins too. */
export function descendantProcesses(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const child of processIds()) {
    const parent = parentPid(child);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const below: number[] = [];
  for (let queue = [pid]; queue.length > 0;) {
    const next = children.get(queue.shift()!) ?? [];
    below.push(...next);
    queue.push(...next);
  }
  return below;
}

/** Each of the processes followed by every process below it: a CLI with its language host and plugins. */
export function processTrees(pids: readonly number[]): number[] {
  return pids.flatMap((pid) => [pid, ...descendantProcesses(pid)]);
}

/** SIGKILLs the given processes; returns those that were still running. */
export function killProcesses(pids: readonly number[]): number[] {
  const killed: number[] = [];
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // already gone
    }
  }
  return killed;
}

/** True while the process runs; a zombie (exited, not yet reaped by an init that never reaps) counts as dead. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may contain spaces, so read after the last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no procfs (macOS): signal 0 succeeding is all we know
  }
}
