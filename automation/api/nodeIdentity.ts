/**
 * A node's id is derived from the NodeClaim name (uniqueID): a short stable hash, so that
 * `<clusterId>-<nodeId>` is always a valid hostname whatever the claim is called, and a replayed
 * create lands on the same node.
 */
import { sha256Hex } from "../../components/shared/canonicalJson";

/** `k` + 12 hex digits of sha256(uniqueID): 48 bits, a DNS label of 13 characters. */
export function nodeIdFor(uniqueID: string): string {
  return `k${sha256Hex(uniqueID).slice(0, 12)}`;
}
