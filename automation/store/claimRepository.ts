/**
 * The claims as every backend offers them: the embedded SQLite store (claimStore.ts, through
 * SqliteClaimRepository) and PostgreSQL for several replicas (postgresClaimStore.ts). Reads and
 * writes are asynchronous, so a network database fits; the transactional writes (an admission, a
 * delete, a run's patches) are whole operations of the interface rather than transactions a caller
 * opens, so SQLite keeps running each of them synchronously inside its group commit (groupCommit.ts)
 * and PostgreSQL serialises them per cluster across replicas.
 */
import type { Claim, ClaimPatch, ClaimStatus, ClaimStore, PoolUsage } from "./claimStore";

export type NewClaim = Omit<Claim, "createdAt" | "updatedAt">;

/** What admission counts: the pool's occupying claims and the API stack shard of each placement slot. */
export interface Occupancy {
  readonly usage: PoolUsage;
  readonly placementSlots: number[];
  readonly slotShards: Map<number, string>;
}

/** What an admission decides by, read inside its transaction. */
export interface AdmissionView {
  /** The claim already holding the node id derived from the uniqueID (another uniqueID's: a conflict). */
  readonly clash: Claim | undefined;
  readonly occupancy: Occupancy;
  /** The cluster's occupying claims on the private network (claimStore.ts `privateNetworkMembers`). */
  readonly privateNetworkMembers: () => number;
}

export interface AdmissionRequest {
  readonly clusterId: string;
  readonly uniqueId: string;
  readonly nodeId: string;
  readonly pool: string;
}

/** A create's outcome: the claim an earlier create with this uniqueID made (its body is the caller's to compare), or the new one. */
export type Admission = { readonly earlier: Claim } | { readonly claim: Claim };

/** A delete's outcome: the status it found (absent: no such claim), and the shard whose next run removes the server. */
export interface DeleteRequest {
  readonly found: ClaimStatus | undefined;
  readonly shard?: string;
}

export interface ClaimListFilter {
  readonly pool?: string;
  readonly statuses?: readonly ClaimStatus[];
  readonly shard?: string;
}

export interface ClaimRepository {
  readonly backend: "sqlite" | "postgres";
  /**
   * Changes whenever a claim may have changed, while only this process writes them (what is derived
   * from the claims may be kept while it is the same); undefined when other replicas write too.
   */
  readonly claimsVersion: number | undefined;
  timestamp(): string;
  get(clusterId: string, nodeId: string): Promise<Claim | undefined>;
  status(clusterId: string, nodeId: string): Promise<ClaimStatus | undefined>;
  byUniqueId(clusterId: string, uniqueId: string): Promise<Claim | undefined>;
  /** Visible claims (not GONE) unless statuses says otherwise, by creation. */
  list(clusterId: string, filter?: ClaimListFilter): Promise<Claim[]>;
  occupancy(clusterId: string, pool: string): Promise<Occupancy>;
  privateNetworkMembers(clusterId: string): Promise<number>;
  countByStatus(clusterId: string): Promise<Record<ClaimStatus, number>>;
  countByStatusInShard(clusterId: string, shard: string): Promise<Record<ClaimStatus, number>>;
  shardOf(clusterId: string, nodeId: string): Promise<string | undefined>;
  shards(clusterId: string, statuses: readonly ClaimStatus[]): Promise<string[]>;
  /**
   * A create, atomically and serialised with every other admission of the cluster (in every
   * replica): an earlier claim with the uniqueID is answered as it is; otherwise `decide` (which may
   * throw, writing nothing) builds the claim from what it sees, and it is inserted. Durable when it resolves.
   */
  admit(request: AdmissionRequest, decide: (view: AdmissionView) => NewClaim): Promise<Admission>;
  /** A delete: PENDING becomes GONE at once, RUNNING/PROVISIONING/FAILED become TERMINATING; the rest stay. Durable when it resolves. */
  requestDelete(clusterId: string, nodeId: string): Promise<DeleteRequest>;
  /** Applies the patches in one transaction; durable when it resolves. */
  update(clusterId: string, patches: ReadonlyArray<{ readonly nodeId: string; readonly patch: ClaimPatch }>): Promise<void>;
  /** Resolves once every write so far is durable. */
  durable(): Promise<void>;
  close(): Promise<void>;
}

/** The embedded store behind the interface: each write one group-commit member, exactly as the API writes it today. */
export class SqliteClaimRepository implements ClaimRepository {
  readonly backend = "sqlite";

  constructor(
    private readonly store: ClaimStore,
    private readonly onClose: () => void = () => undefined,
  ) {}

  get claimsVersion(): number {
    return this.store.claimsVersion;
  }

  timestamp(): string {
    return this.store.timestamp();
  }

  get(clusterId: string, nodeId: string): Promise<Claim | undefined> {
    return this.read(() => this.store.get(clusterId, nodeId));
  }

  status(clusterId: string, nodeId: string): Promise<ClaimStatus | undefined> {
    return this.read(() => this.store.status(clusterId, nodeId));
  }

  byUniqueId(clusterId: string, uniqueId: string): Promise<Claim | undefined> {
    return this.read(() => this.store.byUniqueId(clusterId, uniqueId));
  }

  list(clusterId: string, filter: ClaimListFilter = {}): Promise<Claim[]> {
    return this.read(() => this.store.list(clusterId, filter));
  }

  occupancy(clusterId: string, pool: string): Promise<Occupancy> {
    return this.read(() => this.store.occupancy(clusterId, pool));
  }

  privateNetworkMembers(clusterId: string): Promise<number> {
    return this.read(() => this.store.privateNetworkMembers(clusterId));
  }

  countByStatus(clusterId: string): Promise<Record<ClaimStatus, number>> {
    return this.read(() => this.store.countByStatus(clusterId));
  }

  countByStatusInShard(clusterId: string, shard: string): Promise<Record<ClaimStatus, number>> {
    return this.read(() => this.store.countByStatusInShard(clusterId, shard));
  }

  shardOf(clusterId: string, nodeId: string): Promise<string | undefined> {
    return this.read(() => this.store.shardOf(clusterId, nodeId));
  }

  shards(clusterId: string, statuses: readonly ClaimStatus[]): Promise<string[]> {
    return this.read(() => this.store.shards(clusterId, statuses));
  }

  admit(request: AdmissionRequest, decide: (view: AdmissionView) => NewClaim): Promise<Admission> {
    const { store } = this;
    return store.commitTogether((): Admission => {
      // Inside the transaction: the same uniqueID may be earlier in this group.
      const earlier = store.byUniqueId(request.clusterId, request.uniqueId);
      if (earlier) return { earlier };
      const claim = decide({
        clash: store.get(request.clusterId, request.nodeId),
        occupancy: store.occupancy(request.clusterId, request.pool),
        privateNetworkMembers: () => store.privateNetworkMembers(request.clusterId),
      });
      return { claim: store.insert(claim) };
    });
  }

  requestDelete(clusterId: string, nodeId: string): Promise<DeleteRequest> {
    const { store } = this;
    return store.commitTogether((): DeleteRequest => {
      const found = store.status(clusterId, nodeId);
      const patch = deletePatch(found, store.timestamp());
      if (!patch) return { found };
      store.update(clusterId, nodeId, patch);
      if (found === "PENDING") return { found };
      const shard = store.shardOf(clusterId, nodeId);
      return shard === undefined ? { found } : { found, shard };
    });
  }

  update(clusterId: string, patches: ReadonlyArray<{ readonly nodeId: string; readonly patch: ClaimPatch }>): Promise<void> {
    return this.store.commitTogether(() => {
      for (const { nodeId, patch } of patches) this.store.update(clusterId, nodeId, patch);
    });
  }

  durable(): Promise<void> {
    return this.store.durable();
  }

  close(): Promise<void> {
    this.onClose();
    return Promise.resolve();
  }

  /** A read of what is committed (SQLite answers synchronously). */
  private read<T>(fn: () => T): Promise<T> {
    return settledOf(fn);
  }
}

/** A synchronous SQLite call as a promise: its result, or the error it threw as a rejection. */
export function settledOf<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** The patch a delete makes of a claim in this status; none when it changes nothing (missing, GONE, TERMINATING). */
export function deletePatch(status: ClaimStatus | undefined, at: string): ClaimPatch | undefined {
  if (status === undefined || status === "GONE" || status === "TERMINATING") return undefined;
  return status === "PENDING" ? { status: "GONE", deleteRequestedAt: at, goneAt: at } : { status: "TERMINATING", deleteRequestedAt: at };
}
