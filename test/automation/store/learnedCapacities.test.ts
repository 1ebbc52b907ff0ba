/**
 * The learned_capacities table (automation/store/learnedCapacities.ts) in a real SQLite file: a
 * write only lowers, whatever order reports arrive in, keys do not mix, and a reopened store (a
 * restarted service) offers what it learned before.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import type { NodeResources } from "../../../components/bootstrap/kubeletReservations";
import { openDatabase } from "../../../automation/store/database";
import { LearnedCapacities, type LearnedKey } from "../../../automation/store/learnedCapacities";
import { tempDataDir } from "../../support/apiHarness";

const KEY: LearnedKey = { serverType: "cpx21", image: "ubuntu-24.04", kubelet: "0123456789abcdef" };

const resources = fc
  .record({
    cpuMillis: fc.integer({ min: 1, max: 64_000 }),
    memoryMiB: fc.integer({ min: 1, max: 1 << 20 }),
    pods: fc.integer({ min: 0, max: 500 }),
    ephemeralStorageMiB: fc.integer({ min: 0, max: 1 << 24 }),
  })
  // Plain objects, as the kubelet's JSON gives them (fast-check's records have no prototype).
  .map((r) => ({ ...r }));

const FIELDS = ["cpuMillis", "memoryMiB", "pods", "ephemeralStorageMiB"] as const;

function smallest(list: readonly NodeResources[]): NodeResources {
  return Object.fromEntries(FIELDS.map((f) => [f, Math.min(...list.map((r) => r[f]))])) as unknown as NodeResources;
}

describe("learned capacities store", () => {
  it("keeps the smallest of every report, field by field, in any order", () => {
    const dir = tempDataDir("nodefleet-learned-");
    const db = openDatabase(dir);
    try {
      let run = 0;
      fc.assert(
        fc.property(fc.array(fc.tuple(resources, resources), { minLength: 1, maxLength: 6 }), (reports) => {
          const store = new LearnedCapacities(db);
          const key = { ...KEY, serverType: `type-${run++}` };
          for (const [capacity, allocatable] of reports) store.lower("example", key, { capacity, allocatable }, "node-a");
          const expected = { capacity: smallest(reports.map((r) => r[0])), allocatable: smallest(reports.map((r) => r[1])) };
          const cached = store.get("example", key)!;
          assert.deepEqual({ capacity: cached.capacity, allocatable: cached.allocatable }, expected);
          // What SQLite holds, read by a fresh instance (no cache).
          const stored = new LearnedCapacities(db).get("example", key)!;
          assert.deepEqual({ capacity: stored.capacity, allocatable: stored.allocatable }, expected);
          assert.equal(stored.firstNode, "node-a");
        }),
        { numRuns: 50 },
      );
    } finally {
      db.close();
    }
  });

  it("keeps server types, images, kubelet settings and clusters apart, and survives a reopen", () => {
    const dir = tempDataDir("nodefleet-learned-");
    const small = { cpuMillis: 2000, memoryMiB: 3000, pods: 110, ephemeralStorageMiB: 30_000 };
    const db = openDatabase(dir);
    const store = new LearnedCapacities(db, () => new Date("2026-01-02T03:04:05Z"));
    store.lower("example", KEY, { capacity: small, allocatable: small }, "node-1");
    db.close();

    const again = openDatabase(dir);
    try {
      const reopened = new LearnedCapacities(again);
      const entry = reopened.get("example", KEY);
      assert.deepEqual(entry?.allocatable, small);
      assert.equal(entry?.learnedAt, "2026-01-02T03:04:05.000Z");
      assert.equal(reopened.get("example", { ...KEY, image: "ubuntu-22.04" }), undefined);
      assert.equal(reopened.get("example", { ...KEY, serverType: "cpx31" }), undefined);
      assert.equal(reopened.get("example", { ...KEY, kubelet: "fedcba9876543210" }), undefined);
      assert.equal(reopened.get("other", KEY), undefined);
      assert.deepEqual(
        reopened.list("example").map((e) => e.key),
        [KEY],
      );
    } finally {
      again.close();
    }
  });
});
