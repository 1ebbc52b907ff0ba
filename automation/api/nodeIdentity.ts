/**
 * A node's id is derived from the NodeClaim name (uniqueID): a short stable hash, so that
 * `<clusterId>-<nodeId>` is always a valid hostname whatever the claim is called, and a replayed
 * create lands on the same node.
 */
import { createHash } from "node:crypto";

/** `k` + 12 hex digits of sha256(uniqueID): 48 bits, a DNS label of 13 characters. */
export function nodeIdFor(uniqueID: string): string {
  return `k${createHash("sha256").update(uniqueID, "utf8").digest("hex").slice(0, 12)}`;
}
