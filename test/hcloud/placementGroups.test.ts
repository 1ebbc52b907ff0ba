import { strict as assert } from "node:assert";
import fc from "fast-check";
import { HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP } from "../../components/fleet/hcloudLocations";
import { chunkIntoSpreadGroups, lowestFreeSlot, spreadGroupIndex } from "../../components/hcloud/placementGroups";

const uniqueSlots = fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { maxLength: 120 });

function groupOf(groups: ReturnType<typeof chunkIntoSpreadGroups<number>>, slot: number): number | undefined {
  return groups.find((g) => g.members.includes(slot))?.index;
}

describe("placement groups", () => {
  it("puts slots 0-9 in group 0, 10-19 in group 1", () => {
    assert.equal(spreadGroupIndex(0), 0);
    assert.equal(spreadGroupIndex(9), 0);
    assert.equal(spreadGroupIndex(10), 1);
    assert.equal(spreadGroupIndex(22), 2);
  });

  for (const [count, groups] of [
    [0, 0],
    [1, 1],
    [10, 1],
    [11, 2],
    [23, 3],
  ] as const) {
    it(`chunks ${count} members into ${groups} group(s)`, () => {
      const chunks = chunkIntoSpreadGroups(
        Array.from({ length: count }, (_, i) => i),
        (i) => i,
      );
      assert.equal(chunks.length, groups);
      assert.deepEqual(
        chunks.map((c) => c.members.length).reduce((a, b) => a + b, 0),
        count,
      );
    });
  }

  it("never puts more than 10 members in a group, and keeps every member exactly once", () => {
    fc.assert(
      fc.property(uniqueSlots, (slots) => {
        const groups = chunkIntoSpreadGroups(slots, (s) => s);
        for (const g of groups) assert.ok(g.members.length <= HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP && g.members.length > 0);
        assert.deepEqual(
          groups.flatMap((g) => g.members).sort((a, b) => a - b),
          [...slots].sort((a, b) => a - b),
        );
        assert.deepEqual(
          groups.map((g) => g.index),
          [...new Set(groups.map((g) => g.index))].sort((a, b) => a - b),
        );
      }),
    );
  });

  it("never moves a member when others are added or removed", () => {
    fc.assert(
      fc.property(uniqueSlots, uniqueSlots, (before, changes) => {
        const after = [...new Set([...before.filter((s) => !changes.includes(s) || s % 2 === 0), ...changes])];
        const g1 = chunkIntoSpreadGroups(before, (s) => s);
        const g2 = chunkIntoSpreadGroups(after, (s) => s);
        for (const slot of before.filter((s) => after.includes(s))) assert.equal(groupOf(g2, slot), groupOf(g1, slot));
      }),
    );
  });

  it("rejects duplicate or invalid slots", () => {
    assert.throws(() => chunkIntoSpreadGroups([1, 1], (s) => s), /slot 1 is used by two members/);
    assert.throws(() => chunkIntoSpreadGroups([-1], (s) => s), /non-negative integer/);
    assert.throws(() => chunkIntoSpreadGroups([1.5], (s) => s), /non-negative integer/);
  });

  it("admits new members into the lowest free slot, filling holes left by removals", () => {
    assert.equal(lowestFreeSlot([]), 0);
    assert.equal(lowestFreeSlot([0, 1, 3]), 2);
    fc.assert(
      fc.property(uniqueSlots, (slots) => {
        const free = lowestFreeSlot(slots);
        assert.ok(!slots.includes(free));
        for (let s = 0; s < free; s++) assert.ok(slots.includes(s));
      }),
    );
  });
});
