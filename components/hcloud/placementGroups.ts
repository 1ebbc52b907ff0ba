/**
 * Spread placement groups for Hetzner Cloud pools. Hetzner puts at most 10 servers in one spread
 * group, and moving a running server into another group needs it powered off, so a member's group
 * must never depend on the other members: it depends only on the member's own placement slot.
 *
 * During a rolling replacement (fleet/rolloutPlan.ts) a new server goes to its slot's group when that
 * has room beside the old server, else to another group with room; each server records its group
 * and keeps it for its lifetime.
 *
 * Slots: a static pool uses the member's position (the replica index for `replicas`, the list
 * position for an explicit `nodes` list); the scaling API gives each autoscaled member the lowest
 * free slot at admission and keeps it, so removals leave holes instead of moving anyone.
 */
import { HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP } from "../fleet/hcloudLocations";

/** The spread group a slot belongs to: slots 0-9 -> group 0, 10-19 -> group 1, ... */
export function spreadGroupIndex(slot: number, groupSize: number = HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP): number {
  if (!Number.isInteger(slot) || slot < 0) throw new RangeError(`placement slot must be a non-negative integer, got ${slot}`);
  return Math.floor(slot / groupSize);
}

export interface SpreadGroup<T> {
  /** Group index; part of the group's name, so it never changes for a given slot. */
  readonly index: number;
  /** Members in slot order. */
  readonly members: readonly T[];
}

/**
 * Groups members by slot. Slots must be unique (two members in one slot could overflow a group);
 * only non-empty groups are returned, in index order.
 */
export function chunkIntoSpreadGroups<T>(
  members: readonly T[],
  slotOf: (member: T) => number,
  groupSize: number = HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP,
): SpreadGroup<T>[] {
  const seen = new Set<number>();
  const groups = new Map<number, Array<{ slot: number; member: T }>>();
  for (const member of members) {
    const slot = slotOf(member);
    if (seen.has(slot)) throw new RangeError(`placement slot ${slot} is used by two members; slots must be unique`);
    seen.add(slot);
    const index = spreadGroupIndex(slot, groupSize);
    const group = groups.get(index) ?? [];
    group.push({ slot, member });
    groups.set(index, group);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, entries]) => ({ index, members: entries.sort((a, b) => a.slot - b.slot).map((e) => e.member) }));
}

/** The lowest slot not in use: where the scaling API admits a new member so groups fill up before new ones open. */
export function lowestFreeSlot(usedSlots: Iterable<number>): number {
  const used = new Set(usedSlots);
  let slot = 0;
  while (used.has(slot)) slot++;
  return slot;
}
