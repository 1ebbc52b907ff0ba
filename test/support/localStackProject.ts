/**
 * For end-to-end tests on the local cloud: a throw-away Pulumi project with this repository's
 * settings and its compiled program (so the local stack file lands in a temporary folder, never in
 * the working copy), the real CLI run in it, and polling with a deadline.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { REPOSITORY_ROOT } from "./serveProcess";

/** Creates `<dir>` as a project whose program is `dist/stacks/index.js` of this repository. */
export function localStackProject(dir: string): string {
  mkdirSync(join(dir, "stacks"), { recursive: true });
  const settings = parse(readFileSync(join(REPOSITORY_ROOT, "Pulumi.yaml"), "utf8")) as Record<string, unknown>;
  writeFileSync(
    join(dir, "Pulumi.yaml"),
    JSON.stringify({
      ...settings,
      runtime: "nodejs",
      main: join(REPOSITORY_ROOT, "dist", "stacks", "index.js"),
      plugins: { providers: [{ name: "nodefleet", path: join(REPOSITORY_ROOT, "bin") }] },
    }),
  );
  return dir;
}
