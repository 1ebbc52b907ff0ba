/**
 * API tokens: `<clusterId>:<token>` pairs (NODEFLEET_API_TOKENS, comma-separated), several per
 * cluster so they can be rotated. Only sha256 hashes are kept in memory; a presented token is
 * hashed and compared with every stored hash in constant time, so neither the comparison nor the
 * number of tokens checked reveals how much of a token matched.
 */
import { hash, timingSafeEqual } from "node:crypto";

export interface TokenEntry {
  readonly clusterId: string;
  readonly hash: Buffer;
}

export function hashToken(token: string): Buffer {
  // One-shot hash: no Hash object per request.
  return hash("sha256", token, "buffer");
}

/** Parses `<clusterId>:<token>,...`; malformed entries are errors that never echo the token itself. */
export function parseApiTokens(spec: string | undefined): TokenEntry[] {
  if (!spec) return [];
  const entries: TokenEntry[] = [];
  spec
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .forEach((pair, index) => {
      const colon = pair.indexOf(":");
      const clusterId = colon > 0 ? pair.slice(0, colon).trim() : "";
      const token = colon > 0 ? pair.slice(colon + 1).trim() : "";
      if (!clusterId || token.length < 16) {
        throw new Error(`NODEFLEET_API_TOKENS entry ${index + 1} must be <clusterId>:<token> with a token of at least 16 characters`);
      }
      entries.push({ clusterId, hash: hashToken(token) });
    });
  return entries;
}

export class TokenVerifier {
  constructor(private readonly entries: readonly TokenEntry[]) {}

  get size(): number {
    return this.entries.length;
  }

  /** The clusters that have at least one token. */
  clusters(): Set<string> {
    return new Set(this.entries.map((e) => e.clusterId));
  }

  /** The cluster the token belongs to, or undefined for an unknown token. Checks every entry. */
  clusterOf(token: string): string | undefined {
    return this.clusterOfHash(hashToken(token));
  }

  /** clusterOf() for a token already hashed (hashToken), so a request hashes its token once. */
  clusterOfHash(presented: Buffer): string | undefined {
    let found: string | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.hash, presented) && found === undefined) found = entry.clusterId;
    }
    return found;
  }
}

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
