/**
 * Which of the cluster's API stacks a member lives in. Every engine step rewrites its stack's whole
 * checkpoint, so a burst in one big stack pays for every member already there (bench/fleetScale);
 * members are split into shards of at most `membersPerShard` per pool, each its own stack, so a
 * burst writes small checkpoints whatever the fleet's size. Claims admitted before shards existed
 * carry no shard and stay in shard 0, today's `<cluster>-api` stack: nothing moves.
 */
import type { Claim } from "../store/claimStore";

/** Today's stack: claims without a recorded shard, and the first block of every pool. */
export const DEFAULT_SHARD = "0";

/** Hetzner puts at most 10 servers in a spread placement group (components/hcloud: floor(slot / 10)). */
export const SPREAD_GROUP_SIZE = 10;

/** Members of one pool per shard unless configured (NODEFLEET_SHARD_SIZE). */
export const DEFAULT_MEMBERS_PER_SHARD = 50;

/** The shard a stored claim belongs to. */
export function shardOfClaim(claim: Pick<Claim, "snapshot">): string {
  return claim.snapshot.shard ?? DEFAULT_SHARD;
}

/** What admission knows when it places a new member. */
export interface NewMemberPlacement {
  readonly pool: string;
  /** The slot admission gave the member (its spread group is floor(slot / 10)). */
  readonly placementSlot: number;
  /** The shard of each slot the pool's occupying members hold. */
  readonly slotShards: ReadonlyMap<number, string>;
  /** A multiple of the spread group size, so blocks never split a group. */
  readonly membersPerShard: number;
}

/**
 * A spread group already holding members keeps the new one beside them (a placement group is a
 * resource of one stack); otherwise the member's block of `membersPerShard` slots decides: block 0
 * is shard 0, block b of pool p is `p-b`. Deterministic, so a replayed admission lands alike.
 */
export function shardForNewMember({ pool, placementSlot, slotShards, membersPerShard }: NewMemberPlacement): string {
  const group = Math.floor(placementSlot / SPREAD_GROUP_SIZE);
  for (const [slot, shard] of slotShards) {
    if (Math.floor(slot / SPREAD_GROUP_SIZE) === group) return shard;
  }
  const block = Math.floor(placementSlot / membersPerShard);
  return block === 0 ? DEFAULT_SHARD : `${pool}-${block}`;
}

class ShardSizeError extends Error {
  override readonly name = "ShardSizeError";
}

/** NODEFLEET_SHARD_SIZE: a positive multiple of the spread group size. */
export function membersPerShard(value: string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_MEMBERS_PER_SHARD;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n % SPREAD_GROUP_SIZE !== 0) {
    throw new ShardSizeError(
      `NODEFLEET_SHARD_SIZE: must be a positive multiple of ${SPREAD_GROUP_SIZE} (a spread placement group is never split), got ${JSON.stringify(value)}`,
    );
  }
  return n;
}
