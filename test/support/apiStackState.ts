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

/** The text of every API stack shard's checkpoint (`<cluster>-api.json`, `<cluster>-api-<shard>.json`), by stack name. */
export function apiStackCheckpoints(dataDir: string, clusterId: string): Map<string, string> {
  const stacks = join(dataDir, "state", ".pulumi", "stacks");
  const shard = new RegExp(`(^|/)(${clusterId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-api(-[^/]+)?)\\.json$`);
  const found = new Map<string, string>();
  for (const file of readdirSync(stacks, { recursive: true, encoding: "utf8" })) {
    const match = shard.exec(file);
    if (match) found.set(match[2]!, readFileSync(join(stacks, file), "utf8"));
  }
  return found;
}

/** A checkpoint's resource as the file backend stores it (the fields the tests read). */
export interface CheckpointResource {
  readonly urn: string;
  readonly type: string;
  readonly sourcePosition?: string;
  readonly stackTrace?: unknown[];
}

/**
 * A member's resources in a checkpoint: every resource whose name is one of the member's server
 * generations or a child named after it (`<cluster>-<nodeId>-<generation>[-role]`).
 */
export function memberResourcesIn(checkpointText: string, clusterId: string, nodeId: string): CheckpointResource[] {
  const resources =
    (JSON.parse(checkpointText) as { checkpoint: { latest: { resources?: CheckpointResource[] } } }).checkpoint.latest.resources ?? [];
  const own = new RegExp(`^${`${clusterId}-${nodeId}`.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-[a-z0-9]{6}(-|$)`);
  return resources.filter((r) => own.test(r.urn.split("::").pop() ?? ""));
}

/** Bytes of state per member, as the file backend stores its resources (JSON indented by four spaces). */
export function stateBytesPerMember(checkpointText: string, clusterId: string, nodeIds: readonly string[]): Map<string, number> {
  return new Map(
    nodeIds.map((nodeId) => [
      nodeId,
      memberResourcesIn(checkpointText, clusterId, nodeId).reduce((sum, r) => sum + Buffer.byteLength(JSON.stringify(r, null, 4)), 0),
    ]),
  );
}
