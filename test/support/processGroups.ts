/**
 * Every process a test run started, reaped when the runner exits or is stopped by a signal (Ctrl-C,
 * SIGTERM, SIGHUP), so a stopped run leaves no control plane, service, driver or plugin behind:
 * the groups tests start with `detached: true` (a shell block, a service), and every descendant of
 * the runner (a control plane's processes, the pulumi CLI and its plugins). A SIGKILL of the runner
 * cannot be answered from inside it.
 */
import { descendantProcesses, killProcesses } from "../../automation/engine/cliProcesses";

const groups = new Set<number>();
let installed = false;

/** Sends `signal` to the whole group; a group that is already gone is not an error. */
export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

/** SIGKILLs the tracked groups and every descendant of this process; synchronous, for `exit`. */
function reapAll(): void {
  const below = descendantProcesses(process.pid);
  for (const pgid of groups) killGroup(pgid, "SIGKILL");
  groups.clear();
  killProcesses(below);
}

/** Reaps on exit and on the stopping signals (then stops with that signal). Idempotent. */
export function installReaper(): void {
  if (installed) return;
  installed = true;
  process.once("exit", reapAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      reapAll();
      process.kill(process.pid, signal);
    });
  }
}

export function trackGroup(pgid: number): void {
  installReaper();
  groups.add(pgid);
}

export function untrackGroup(pgid: number): void {
  groups.delete(pgid);
}
