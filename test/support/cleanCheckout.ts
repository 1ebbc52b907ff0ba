/**
 * A clean checkout of this working tree for tests that run what a user runs: the files git tracks
 * or would track (as they are in the working tree, so uncommitted changes are tested too), none it
 * ignores (no dist/, node_modules/, .nodefleet/ or generated stack files). `npm ci` is stood in for
 * by links to this repository's node_modules/ and dist/, which `npm test` has just built from the
 * same sources.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { REPOSITORY_ROOT } from "./serveProcess";

export function cleanCheckout(dir: string): string {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPOSITORY_ROOT,
    encoding: "utf8",
  });
  for (const file of new Set(listed.split("\0").filter(Boolean))) {
    const from = join(REPOSITORY_ROOT, file);
    // Deleted in the working tree but still in the index: not part of the checkout.
    if (!existsSync(from) || !lstatSync(from).isFile()) continue;
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    copyFileSync(from, join(dir, file));
  }
  for (const built of ["node_modules", "dist"]) symlinkSync(join(REPOSITORY_ROOT, built), join(dir, built));
  return dir;
}
