/**
 * The pulumi CLI processes this Node process started for one stack, found through /proc (the
 * Automation API does not expose its child processes): used to force-stop a run whose graceful
 * cancellation (SIGINT) did not end it in time.
 */
import { readFileSync, readdirSync } from "node:fs";
import { basename } from "node:path";

function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return [];
  }
}

function processIds(): number[] {
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
  for (let queue = [pid]; queue.length > 0; ) {
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
