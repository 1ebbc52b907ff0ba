/** A process's memory and CPU time as Linux reports them in /proc/<pid>: resident now, or its peak so far. */
import { readFileSync, readdirSync, readlinkSync } from "node:fs";

/** `VmRSS` (resident now) or `VmHWM` (the resident peak, its high-water mark) of `pid`, in MiB; NaN once it is gone. */
export function processMemoryMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Math.round(Number(match[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** The pids of this host's processes named `command` (their comm) whose working directory is `cwd`. */
export function processesIn(command: string, cwd: string): number[] {
  return readdirSync("/proc")
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === command && readlinkSync(`/proc/${pid}/cwd`) === cwd;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** utime + stime of a process, in ms (from /proc; clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
