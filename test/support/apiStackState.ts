/** The scaling API's own stack state as `nodefleet serve` keeps it on its file backend, for leftover checks. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The text of the API stack's checkpoint (`<data dir>/state/.pulumi/stacks/<project>/<cluster>-api.json`). */
export function apiStackCheckpoint(dataDir: string, clusterId: string): string {
  const stacks = join(dataDir, "state", ".pulumi", "stacks");
  const all = readdirSync(stacks, { recursive: true, encoding: "utf8" });
  const files = all.filter((f) => f.endsWith(`${clusterId}-api.json`));
  assert.equal(files.length, 1, `one checkpoint of the API stack among ${all.join(", ")}`);
  return readFileSync(join(stacks, files[0]!), "utf8");
}
