/** The command lines of this host's processes (other than this one) that contain `text`. */
import { readFileSync, readdirSync } from "node:fs";

export function processesMentioning(text: string): string[] {
  return readdirSync("/proc")
    .filter((pid) => /^\d+$/.test(pid) && Number(pid) !== process.pid)
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      } catch {
        return "";
      }
    })
    .filter((cmdline) => cmdline.includes(text));
}
