/**
 * Canonical JSON and its hash: the one way nodefleet fingerprints a value (generation suffixes,
 * template snapshots, request bodies), so that equal values hash equally whatever their key order.
 */
import { hash } from "node:crypto";

/** JSON with object keys sorted; arrays keep their order; `undefined` members are left out (top level: `null`). */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return "null";
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Lower-case hex sha256 of a UTF-8 string. */
export function sha256Hex(text: string): string {
  // One-shot: no Hash object per call (node ids and request fingerprints are hashed on every create).
  return hash("sha256", text, "hex");
}

/** Lower-case hex sha256 of `canonicalJson(value)`. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
