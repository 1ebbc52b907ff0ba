/**
 * Admissions on PostgreSQL in groups, as the SQLite store commits its writes (groupCommit.ts): the
 * creates one replica receives for a cluster while its previous group is in flight (or in the same
 * turn of the event loop) are admitted in one transaction. It takes the cluster's admission lock
 * (its `claim_clusters` row, FOR UPDATE) once, reads what the group decides by in three statements
 * after the lock is granted (READ COMMITTED: each sees every admission committed before, on any
 * replica), decides each member in arrival order against that view plus the members admitted before
 * it in the group, inserts the group's claims in one statement and commits. The lock is held for
 * five round trips whatever the group's size, where one admission at a time held it for seven.
 *
 * A group holds one admission per uniqueID and per node id: a second waits for the next group, and
 * finds the first there as committed. A decision that throws rejects its member alone. When the
 * transaction fails before its COMMIT (one member's row refused, say), nothing was written and each
 * member is admitted again alone, deciding afresh; a failed COMMIT rejects the whole group.
 */
import type pg from "pg";
import { OCCUPYING_STATUSES, type Claim } from "./claimStore";
import type { Admission, AdmissionRequest, AdmissionView, NewClaim, Occupancy } from "./claimRepository";

/** Rows of one INSERT at most (20 parameters each, far below PostgreSQL's 65535). */
const MAX_GROUP = 100;

interface Member {
  readonly request: AdmissionRequest;
  readonly decide: (view: AdmissionView) => NewClaim;
  readonly resolve: (admission: Admission) => void;
  readonly reject: (error: unknown) => void;
}

/** What a group reads once its lock is held. */
export interface GroupView {
  /** The cluster's claims with one of the group's uniqueIDs or node ids. */
  readonly claims: readonly Claim[];
  /** Each requested pool's occupancy. */
  readonly occupancy: Map<string, Occupancy>;
  readonly privateNetworkMembers: number;
}

/** What the group's transaction needs of the store (postgresClaimStore.ts). */
export interface GroupStatements {
  /** Takes the cluster's admission lock until the transaction ends. */
  lock(client: pg.PoolClient, clusterId: string): Promise<void>;
  read(client: pg.PoolClient, clusterId: string, requests: readonly AdmissionRequest[]): Promise<GroupView>;
  insert(client: pg.PoolClient, claims: readonly Claim[]): Promise<void>;
  timestamp(): string;
}

type Outcome = { readonly ok: true; readonly value: Admission } | { readonly ok: false; readonly error: unknown };

export class AdmissionGroups {
  private readonly queues = new Map<string, Member[]>();
  /** Clusters with a group scheduled or in flight. */
  private readonly busy = new Set<string>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly statements: GroupStatements,
  ) {}

  admit(request: AdmissionRequest, decide: (view: AdmissionView) => NewClaim): Promise<Admission> {
    return new Promise<Admission>((resolve, reject) => {
      const queue = this.queues.get(request.clusterId) ?? [];
      this.queues.set(request.clusterId, queue);
      queue.push({ request, decide, resolve, reject });
      this.schedule(request.clusterId);
    });
  }

  /** The next group of the cluster closes at the next check phase, unless one is in flight (its end schedules it). */
  private schedule(clusterId: string): void {
    if (this.busy.has(clusterId)) return;
    const queue = this.queues.get(clusterId);
    if (!queue || queue.length === 0) {
      this.queues.delete(clusterId);
      return;
    }
    this.busy.add(clusterId);
    setImmediate(() => {
      void this.flush(clusterId).finally(() => {
        this.busy.delete(clusterId);
        this.schedule(clusterId);
      });
    });
  }

  private async flush(clusterId: string): Promise<void> {
    const queue = this.queues.get(clusterId) ?? [];
    const group: Member[] = [];
    const uniqueIds = new Set<string>();
    const nodeIds = new Set<string>();
    const rest: Member[] = [];
    for (const member of queue) {
      const { uniqueId, nodeId } = member.request;
      if (group.length >= MAX_GROUP || uniqueIds.has(uniqueId) || nodeIds.has(nodeId)) rest.push(member);
      else {
        group.push(member);
        uniqueIds.add(uniqueId);
        nodeIds.add(nodeId);
      }
    }
    this.queues.set(clusterId, rest);
    const outcomes = await this.admitGroup(clusterId, group).catch(async (error: unknown) => {
      if (group.length === 1) return [{ ok: false, error } as const];
      // Nothing was written: each member alone, so that one member's refused row fails it alone.
      const alone: Outcome[] = [];
      for (const member of group)
        alone.push((await this.admitGroup(clusterId, [member]).catch((e: unknown) => [{ ok: false, error: e } as const]))[0]!);
      return alone;
    });
    group.forEach((member, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) member.resolve(outcome.value);
      else member.reject(outcome.error);
    });
  }

  /**
   * One transaction: the outcomes once it committed. Rejects (having rolled back, nothing written)
   * when a statement before the COMMIT fails; a failed COMMIT answers every member with its error.
   */
  private async admitGroup(clusterId: string, group: readonly Member[]): Promise<Outcome[]> {
    const client = await this.pool.connect();
    // A connection whose ROLLBACK failed is in an unknown state: it is closed, not reused.
    let broken: Error | undefined;
    try {
      let outcomes: Outcome[];
      try {
        await client.query("BEGIN");
        await this.statements.lock(client, clusterId);
        const requests = group.map((m) => m.request);
        const view = await this.statements.read(client, clusterId, requests);
        const decided = this.decideAll(group, view);
        outcomes = decided.outcomes;
        if (decided.claims.length > 0) await this.statements.insert(client, decided.claims);
      } catch (error) {
        await client.query("ROLLBACK").catch((failure: unknown) => {
          broken = failure instanceof Error ? failure : new Error(String(failure));
        });
        throw error;
      }
      try {
        await client.query("COMMIT");
      } catch (error) {
        broken = error instanceof Error ? error : new Error(String(error));
        return group.map(() => ({ ok: false, error }));
      }
      return outcomes;
    } finally {
      client.release(broken);
    }
  }

  /** Each member in order against the view, counting the claims decided before it in the group. */
  private decideAll(group: readonly Member[], view: GroupView): { outcomes: Outcome[]; claims: Claim[] } {
    const byUniqueId = new Map(view.claims.map((c) => [c.uniqueId, c]));
    const byNodeId = new Map(view.claims.map((c) => [c.nodeId, c]));
    const occupancies = view.occupancy;
    let privateNetworkMembers = view.privateNetworkMembers;
    const outcomes: Outcome[] = [];
    const claims: Claim[] = [];
    for (const { request, decide } of group) {
      const earlier = byUniqueId.get(request.uniqueId);
      if (earlier) {
        outcomes.push({ ok: true, value: { earlier } });
        continue;
      }
      const held = occupancies.get(request.pool) ?? emptyOccupancy();
      let decided: NewClaim;
      try {
        decided = decide({
          clash: byNodeId.get(request.nodeId),
          occupancy: copyOf(held),
          privateNetworkMembers: () => privateNetworkMembers,
        });
      } catch (error) {
        outcomes.push({ ok: false, error });
        continue;
      }
      const at = this.statements.timestamp();
      const claim: Claim = { ...decided, createdAt: at, updatedAt: at };
      claims.push(claim);
      outcomes.push({ ok: true, value: { claim } });
      if (!OCCUPYING_STATUSES.includes(claim.status)) continue;
      const pool = occupancies.get(claim.pool);
      if (pool) occupancies.set(claim.pool, withClaim(pool, claim));
      if (networkOf(claim) !== "public") privateNetworkMembers += 1;
    }
    return { outcomes, claims };
  }
}

/** The row's snapshot_json #>> '{template,network}' (a claim without a template counts as private, as there). */
function networkOf(claim: Claim): unknown {
  return (claim.snapshot as { readonly template?: { readonly network?: unknown } }).template?.network;
}

export function emptyOccupancy(): Occupancy {
  return { usage: { nodes: 0, cpuMillis: 0, memoryMiB: 0 }, placementSlots: [], slotShards: new Map() };
}

function copyOf(occupancy: Occupancy): Occupancy {
  return { usage: { ...occupancy.usage }, placementSlots: [...occupancy.placementSlots], slotShards: new Map(occupancy.slotShards) };
}

/** The pool's occupancy once the occupying claim is in it, as the store's occupancy query would count it. */
function withClaim(occupancy: Occupancy, claim: Claim): Occupancy {
  const { usage } = occupancy;
  const slotShards = new Map(occupancy.slotShards);
  const slot = claim.snapshot.placementSlot;
  // The row's placement_slot and its COALESCE(snapshot_json->>'shard', '0').
  if (typeof slot === "number") slotShards.set(slot, claim.snapshot.shard ?? "0");
  return {
    usage: { nodes: usage.nodes + 1, cpuMillis: usage.cpuMillis + claim.cpuMillis, memoryMiB: usage.memoryMiB + claim.memoryMiB },
    placementSlots: [...slotShards.keys()],
    slotShards,
  };
}
