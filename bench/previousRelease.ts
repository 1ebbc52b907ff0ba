/**
 * Another commit of nodefleet, compiled beside this checkout: its source from git history (`git
 * archive`, so the repository's worktrees and index stay untouched), built with this checkout's
 * node_modules. Upgrade tests and side-by-side benchmarks run its `bin/nodefleet.js`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

const REPOSITORY_ROOT = resolve(__dirname, "..", "..");

/** The last commit before members' drain, Node removal and token moved to nodefleet's provider plugin. */
export const BEFORE_PROVIDER_PLUGIN = "54d688ec84e059300c3db7ad80df382e24ec43bb";

/** The release that first ran an Elastic Metal pool in the local stack on the real engine (stop 49). */
export const ELASTIC_METAL_POOL_RELEASE = "1fd6cbbdf3e183fb6e3e962f8b69c2aa89ce0c18";

/** Extracts and compiles `commit` into `dir` (created); returns its CLI. Fails naming the commit when history lacks it. */
export function buildRelease(commit: string, dir: string): string {
  mkdirSync(dir, { recursive: true });
  let archive: Buffer;
  try {
    archive = execFileSync("git", ["-C", REPOSITORY_ROOT, "archive", "--format=tar", commit], {
      maxBuffer: 256 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (error) {
    throw new Error(`cannot read commit ${commit} from ${REPOSITORY_ROOT}'s history (a shallow clone?): ${(error as Error).message}`);
  }
  execFileSync("tar", ["-x", "-C", dir], { input: archive });
  symlinkSync(join(REPOSITORY_ROOT, "node_modules"), join(dir, "node_modules"));
  execFileSync(process.execPath, [join(REPOSITORY_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", dir], { stdio: "inherit" });
  return join(dir, "bin", "nodefleet.js");
}
