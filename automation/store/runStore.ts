/**
 * What an engine run writes, as every backend offers it: the embedded SQLite store
 * (sqliteRunStore.ts) and PostgreSQL for several replicas (postgresRunStore.ts). A run's begin and
 * its record are each one transaction of the interface (claims, the operation log and the guard
 * fingerprint together), so SQLite keeps running each as one synchronous transaction and
 * PostgreSQL locks the claims it moves; the operation's own steps in between (the guard's preview
 * finished, the up started) are single writes. Every write is durable when it resolves.
 */
import type { Claim, ClaimPatch, ClaimStatus } from "./claimStore";
import type { GuardFingerprint } from "./guardFingerprints";
import type { Operation, OperationKind, OperationOutcome } from "./operationLog";

/** The claims a run begins with (read inside its transaction, so no request slips in between reading and marking). */
export interface BegunRun {
  /** The shard's PENDING, PROVISIONING, RUNNING and TERMINATING claims as they were before the run marked them. */
  readonly claims: readonly Claim[];
  /** The shard's PROVISIONING and RUNNING claims after the PENDING ones became PROVISIONING. */
  readonly members: readonly Claim[];
  readonly operationId: number;
}

export interface BeginRequest {
  readonly clusterId: string;
  readonly shard: string;
  /** The operation the run opens with: the guard's preview, or the up. */
  readonly kind: OperationKind;
}

/** What the up did to one claim (reconciler/runOutcome.ts), to be written if the claim is still in the status the run left it in. */
export interface RecordedClaimUpdate {
  readonly nodeId: string;
  /** Applied only while the claim still has this status (a DELETE during the run wins). */
  readonly expectedStatus: ClaimStatus;
  readonly patch: ClaimPatch;
}

export interface RecordRequest {
  readonly clusterId: string;
  readonly operationId: number;
  readonly updates: readonly RecordedClaimUpdate[];
  readonly operation: OperationOutcome;
  /** Where the shard's guard fingerprint is kept, and the one to keep (none: it is dropped). */
  readonly fingerprintKey: string;
  readonly fingerprint: GuardFingerprint | undefined;
}

/** A shard's run lock across replicas that the calling code holds (`runLockHeld`). */
export interface HeldRunLock {
  readonly clusterId: string;
  readonly shard: string;
  /** Aborts when the lock is lost before the run ends: the database connection holding it ended. */
  readonly lost: AbortSignal;
  /** Whether the database confirms, now, that the lock is held (false when it does not answer in time). */
  confirm(): Promise<boolean>;
}

export interface RunStore {
  /**
   * Runs `run` (a run's begin, engine calls and record) holding the shard's run lock, so no other
   * replica sharing the store runs the shard's stack meanwhile; while another holds it, waits until
   * it is free or `stopping()` says to give up (then resolves undefined without running).
   */
  exclusively<T>(clusterId: string, shard: string, run: () => Promise<T>, stopping: () => boolean): Promise<T | undefined>;
  /**
   * The run lock the calling code (inside `exclusively`) holds across replicas; undefined outside
   * `exclusively`, and for a store whose lock does not reach other replicas (SQLite). While it is
   * held, no other replica's run of the shard's stack is live.
   */
  runLockHeld(): HeldRunLock | undefined;
  /**
   * Marks the shard's PENDING claims PROVISIONING and opens the run's operation over them and the
   * unfinished ones (PROVISIONING, TERMINATING), in one transaction; undefined (nothing written)
   * when nothing is left to reconcile.
   */
  beginRun(request: BeginRequest): Promise<BegunRun | undefined>;
  /**
   * Writes what the up did to each claim (claimOutcomeWrite), finishes its operation and keeps or
   * drops the guard fingerprint, in one transaction; the node ids whose claims it moved.
   */
  recordRun(request: RecordRequest): Promise<string[]>;
  /** Opens an operation of the shard's run (the up after the guard's preview). */
  startOperation(clusterId: string, shard: string, kind: OperationKind, nodes: readonly string[]): Promise<number>;
  /** A run opened as the guard's preview whose guard turned out unneeded becomes the up it is (operationLog.ts `becomeUp`). */
  operationBecomesUp(id: number): Promise<void>;
  finishOperation(id: number, outcome: OperationOutcome): Promise<void>;
  /** The cluster's runs, newest first (`GET /operations`). */
  operations(clusterId: string, limit?: number): Promise<Operation[]>;
  /** The stored guard fingerprint, or undefined (none, or one this version does not read: the guard runs). */
  fingerprint(key: string): Promise<GuardFingerprint | undefined>;
}

/** The statuses a run begins with, and the ones it acts on. */
export const RUN_STATUSES: readonly ClaimStatus[] = ["PENDING", "PROVISIONING", "RUNNING", "TERMINATING"];
export const MEMBER_STATUSES: readonly ClaimStatus[] = ["PROVISIONING", "RUNNING"];

/** The node ids a run acts on: its PENDING claims and the unfinished ones; none when nothing is left to reconcile. */
export function runAffected(claims: readonly Claim[]): string[] {
  const pending = claims.filter((c) => c.status === "PENDING");
  const unfinished = claims.filter((c) => c.status === "PROVISIONING" || c.status === "TERMINATING");
  return [...pending, ...unfinished].map((c) => c.nodeId);
}

/** The run's members: what it marked or found unfinished, and what runs already. */
export function runMembers(members: readonly Claim[], affected: readonly string[]): Claim[] {
  return members.filter((c) => affected.includes(c.nodeId) || c.status === "RUNNING");
}

/**
 * What recording an update writes over the claim as it is now: the patch when the claim is still in
 * the status the run left it in; when a DELETE arrived during the run, only what the run created
 * (the claim stays TERMINATING); nothing else. `moved` says whether the claim's status is the run's.
 */
export function claimOutcomeWrite(
  current: ClaimStatus | undefined,
  update: RecordedClaimUpdate,
): { patch: ClaimPatch; moved: boolean } | undefined {
  if (current === update.expectedStatus) return { patch: update.patch, moved: true };
  if (current === "TERMINATING" && update.patch.instanceId) return { patch: { instanceId: update.patch.instanceId }, moved: false };
  return undefined;
}
