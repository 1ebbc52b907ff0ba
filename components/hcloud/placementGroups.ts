/**
 * Spread placement groups for Hetzner Cloud pools. A spread group holds at most 10 servers and a
 * running server changes group only powered off, so a member's group depends only on its own
 * placement slot, never on the other members. In a rolling replacement a new server goes to its
 * slot's group when that has room beside the old one, else to another with room, and keeps its group
 * for life. Slots: a static member's position (replica index or list position); an autoscaled
 * member's lowest free slot at admission, kept, so removals leave holes instead of moving anyone.
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
