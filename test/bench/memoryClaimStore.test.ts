/**
 * The bench's in-memory claim store answers as the SQLite one does, so that what apiLoad.bench.ts
 * reports for "the service without its store" is the same service doing the same work.
 */
import { strict as assert } from "node:assert";
import { ClaimStore, type Claim } from "../../automation/store/claimStore";
import { openDatabase } from "../../automation/store/database";
import { MemoryClaimStore } from "../../bench/memoryClaimStore";
import { tempDataDir } from "../support/apiHarness";
import { newClaim } from "../support/claimFixture";

/** The same writes on a store, then everything the service reads back (timestamps left out: each store takes its own). */
async function exercise(store: ClaimStore) {
  const versions = [store.claimsVersion];
  await Promise.all(["a", "b", "c"].map((id, slot) => store.commitTogether(() => store.insert(newClaim(id, "burst", slot)))));
  store.transaction(() => store.insert(newClaim("d", "steady")));
  await store.commitTogether(() => store.update("example", "a", { status: "RUNNING", instanceId: "42", ipv4: "203.0.113.7" }));
  await store.commitTogether(() =>
    store.update("example", "b", { status: "FAILED", failureCode: "ServerLimitExceeded", failureReason: "quota" }),
  );
  store.update("example", "c", { status: "TERMINATING", deleteRequestedAt: "2026-12-02T00:00:00.000Z" });
  store.update("example", "c", { status: "GONE", goneAt: "2026-12-02T00:01:00.000Z", ipv4: null });
  versions.push(store.claimsVersion);
  await store.durable();
  const timeless = (c: Claim | undefined) => c && { ...c, createdAt: undefined, updatedAt: undefined };
  return {
    versionMoved: versions[1]! > versions[0]!,
    a: timeless(store.get("example", "a")),
    c: timeless(store.get("example", "c")),
    missing: store.get("example", "zz"),
    byUniqueId: timeless(store.byUniqueId("example", "u-b")),
    status: ["a", "b", "c", "d", "zz"].map((id) => store.status("example", id)),
    list: store.list("example").map(timeless),
    listGone: store.list("example", { statuses: ["GONE"] }).map((c) => c.nodeId),
    listPool: store.list("example", { pool: "steady" }).map((c) => c.nodeId),
    burst: store.occupancy("example", "burst"),
    steady: store.occupancy("example", "steady"),
    counts: store.countByStatus("example"),
  };
}

describe("the bench's in-memory claim store", () => {
  it("reads back what the SQLite claim store reads back after the same writes", async () => {
    const db = openDatabase(tempDataDir());
    // The in-memory store keeps nothing in its database, but opens one as every claim store does.
    const unused = openDatabase(tempDataDir());
    try {
      const expected = await exercise(new ClaimStore(db));
      const actual = await exercise(new MemoryClaimStore(unused));
      assert.equal(expected.versionMoved, true);
      assert.deepEqual(
        expected.burst.usage,
        { nodes: 1, cpuMillis: 3000, memoryMiB: 4096 },
        "a RUNNING claim occupies; FAILED and GONE do not",
      );
      assert.deepEqual(actual, expected);
    } finally {
      db.close();
      unused.close();
    }
  });
});
