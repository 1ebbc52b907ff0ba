/**
 * Where the preview guard's fingerprint of each cluster's API stack is kept between runs: written
 * in the transaction that records a successful up's outcome (so a crash between the up and that
 * transaction leaves the older one, which no longer matches the state the up changed: the next run
 * is guarded), removed after any other up.
 */
import type { Db } from "./database";
import { walSyncOf } from "./walSync";

/** What the fingerprint is made of (reconciler/guardFingerprint.ts takes each), each part a hex digest, stored apart so a log can say which changed. */
export const FINGERPRINT_PARTS = ["program", "config", "shared", "plugins", "state"] as const;

export type FingerprintPart = (typeof FINGERPRINT_PARTS)[number];

export type GuardFingerprint = Readonly<Record<FingerprintPart, string>>;

export class GuardFingerprints {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The stored fingerprint, or undefined (none, or one this version does not read: the guard runs). */
  get(clusterId: string): GuardFingerprint | undefined {
    const row = this.db.prepare("SELECT parts_json FROM guard_fingerprints WHERE cluster_id = ?").get(clusterId) as
      { parts_json: string } | undefined;
    return row && fingerprintOfJson(row.parts_json);
  }

  /** Durable when it returns (inside a store transaction, with it). */
  set(clusterId: string, fingerprint: GuardFingerprint): void {
    walSyncOf(this.db).writeDurably(() =>
      this.db
        .prepare(
          "INSERT INTO guard_fingerprints (cluster_id, parts_json, recorded_at) VALUES (?, ?, ?) ON CONFLICT (cluster_id) DO UPDATE SET parts_json = excluded.parts_json, recorded_at = excluded.recorded_at",
        )
        .run(clusterId, JSON.stringify(fingerprint), this.now().toISOString()),
    );
  }

  clear(clusterId: string): void {
    walSyncOf(this.db).writeDurably(() => this.db.prepare("DELETE FROM guard_fingerprints WHERE cluster_id = ?").run(clusterId));
  }
}

/** A stored fingerprint's parts, or undefined when this version does not read them (both backends store them as JSON text). */
export function fingerprintOfJson(partsJson: string): GuardFingerprint | undefined {
  const parts = JSON.parse(partsJson) as Record<string, unknown>;
  return FINGERPRINT_PARTS.every((part) => typeof parts[part] === "string") ? (parts as GuardFingerprint) : undefined;
}
