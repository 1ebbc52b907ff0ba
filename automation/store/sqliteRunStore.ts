/**
 * The engine runs' writes on the embedded store, as the reconciler wrote them before there was a
 * second backend: the claims (claimStore.ts), the operation log and the guard fingerprints share one
 * SQLite database, so a run's begin and its record are each one IMMEDIATE transaction of the
 * store's own (`ClaimStore.transaction`), outside the API's group commit, its WAL fsynced before it
 * returns; the operation's single steps are durable writes of their own.
 */
import type { ClaimStore } from "./claimStore";
import { settledOf } from "./claimRepository";
import type { GuardFingerprint, GuardFingerprints } from "./guardFingerprints";
import type { Operation, OperationKind, OperationLog, OperationOutcome } from "./operationLog";
import {
  MEMBER_STATUSES,
  RUN_STATUSES,
  claimOutcomeWrite,
  runAffected,
  runMembers,
  type BeginRequest,
  type BegunRun,
  type RecordRequest,
  type RunStore,
} from "./runStore";

export class SqliteRunStore implements RunStore {
  constructor(
    private readonly store: ClaimStore,
    private readonly log: OperationLog,
    private readonly fingerprints: GuardFingerprints,
  ) {}

  /** One process per data directory (dataDirLock.ts), one reconciler per shard in it: nothing to wait for. */
  exclusively<T>(_clusterId: string, _shard: string, run: () => Promise<T>): Promise<T> {
    return run();
  }

  /** No lock across replicas: a replica on SQLite shares its stacks with nobody it could fence. */
  runLockHeld(): undefined {
    return undefined;
  }

  beginRun({ clusterId, shard, kind }: BeginRequest): Promise<BegunRun | undefined> {
    const { store, log } = this;
    return settledOf(() =>
      store.transaction((): BegunRun | undefined => {
        const claims = store.list(clusterId, { statuses: RUN_STATUSES, shard });
        const affected = runAffected(claims);
        if (affected.length === 0) return undefined;
        for (const claim of claims) if (claim.status === "PENDING") store.update(clusterId, claim.nodeId, { status: "PROVISIONING" });
        const operationId = log.start(clusterId, kind, affected);
        const members = runMembers(store.list(clusterId, { statuses: MEMBER_STATUSES, shard }), affected);
        return { claims, members, operationId };
      }),
    );
  }

  recordRun(request: RecordRequest): Promise<string[]> {
    const { store, log, fingerprints } = this;
    const { clusterId } = request;
    return settledOf(() =>
      store.transaction(() => {
        const moved: string[] = [];
        for (const update of request.updates) {
          const write = claimOutcomeWrite(store.status(clusterId, update.nodeId), update);
          if (!write) continue;
          store.update(clusterId, update.nodeId, write.patch);
          if (write.moved) moved.push(update.nodeId);
        }
        if (request.fingerprint) fingerprints.set(request.fingerprintKey, request.fingerprint);
        else fingerprints.clear(request.fingerprintKey);
        log.finish(request.operationId, request.operation);
        return moved;
      }),
    );
  }

  /** The embedded store serves one replica: its operations need no shard to be told apart by. */
  startOperation(clusterId: string, _shard: string, kind: OperationKind, nodes: readonly string[]): Promise<number> {
    return settledOf(() => this.log.start(clusterId, kind, nodes));
  }

  operationBecomesUp(id: number): Promise<void> {
    return settledOf(() => this.log.becomeUp(id));
  }

  finishOperation(id: number, outcome: OperationOutcome): Promise<void> {
    return settledOf(() => this.log.finish(id, outcome));
  }

  operations(clusterId: string, limit?: number): Promise<Operation[]> {
    return settledOf(() => this.log.list(clusterId, limit));
  }

  fingerprint(key: string): Promise<GuardFingerprint | undefined> {
    return settledOf(() => this.fingerprints.get(key));
  }
}
