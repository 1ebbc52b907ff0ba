/**
 * For end-to-end tests on the local cloud: a throw-away Pulumi project with this repository's
 * settings and its compiled program (so the local stack file lands in a temporary folder, never in
 * the working copy), the real CLI run in it, and polling with a deadline.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { REPOSITORY_ROOT } from "./serveProcess";

/**
 * Creates `<dir>` as a project whose program is `dist/stacks/index.js` of this repository, or of
 * another compiled checkout `root` (a previous release, bench/previousRelease.ts).
 */
export function localStackProject(dir: string, root: string = REPOSITORY_ROOT): string {
  mkdirSync(join(dir, "stacks"), { recursive: true });
  const settings = parse(readFileSync(join(REPOSITORY_ROOT, "Pulumi.yaml"), "utf8")) as Record<string, unknown>;
  writeFileSync(
    join(dir, "Pulumi.yaml"),
    JSON.stringify({
      ...settings,
      runtime: "nodejs",
      main: join(root, "dist", "stacks", "index.js"),
      plugins: { providers: [{ name: "nodefleet", path: join(root, "bin") }] },
    }),
  );
  return dir;
}
