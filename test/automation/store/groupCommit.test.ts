/** Group commit on a real SQLite file: writes of one event-loop turn share one commit, each rolls back alone, answers come after the commit. */
import { strict as assert } from "node:assert";
import { ClaimStore } from "../../../automation/store/claimStore";
import { openDatabase } from "../../../automation/store/database";
import { GroupCommit } from "../../../automation/store/groupCommit";
import type { MemberSnapshot } from "../../../automation/reconciler/memberSnapshot";
import { startTestApi, tempDataDir } from "../../support/apiHarness";

const snapshot = { serverType: "cpx21", location: "hel1", placementSlot: 0 } as unknown as MemberSnapshot;
const claim = (nodeId: string) => ({
  clusterId: "example",
  nodeId,
  uniqueId: `u-${nodeId}`,
  requestHash: "h",
  request: {},
  pool: "hel1-burst",
  instanceType: "cpx21",
  zone: "hel1",
  snapshot,
  status: "PENDING" as const,
  cpuMillis: 1,
  memoryMiB: 1,
});

describe("group commit", () => {
  it("commits the writes submitted in one turn once, answering each only after the commit", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const answered: boolean[] = [];
    const writes = Array.from({ length: 20 }, (_, i) =>
      group.run(() => store.insert(claim(`k${i}`))).then((c) => {
        answered.push(db.inTransaction);
        return c;
      }),
    );
    await Promise.all(writes);
    assert.deepEqual(group.stats, { groups: 1, writes: 20, syncs: 1 });
    assert.ok(answered.every((inTransaction) => !inTransaction), "answered after the COMMIT");
    assert.equal(store.list("example").length, 20);
    db.close();
  });

  it("shares one fsync among the groups committed while the previous fsync runs, answering each after its own", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const first = group.run(() => store.insert(claim("first")));
    // Next turns: committed while the first group's fsync is still on the thread pool.
    const later = new Promise((resolve) => setImmediate(resolve)).then(() =>
      Promise.all([group.run(() => store.insert(claim("x"))), group.run(() => store.insert(claim("y")))]),
    );
    const order: string[] = [];
    await Promise.all([first.then(() => order.push("first")), later.then(() => order.push("later"))]);
    assert.deepEqual(order, ["first", "later"]);
    assert.equal(group.stats.writes, 3);
    assert.ok(group.stats.syncs <= group.stats.groups, JSON.stringify(group.stats));
    await group.durable();
    db.close();
  });

  it("rolls back and rejects a write that throws alone; the rest of its group is committed", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const results = await Promise.allSettled([
      group.run(() => store.insert(claim("a"))),
      group.run(() => {
        store.insert(claim("b"));
        throw new Error("refused after writing");
      }),
      group.run(() => store.insert(claim("c"))),
    ]);
    assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
    assert.deepEqual(store.list("example").map((c) => c.nodeId).sort(), ["a", "c"]);
    assert.equal(group.stats.groups, 1);
    db.close();
  });

  it("through the API: concurrent creates all go through group commit, and the same uniqueID at once is one 201 and 200 replays", async () => {
    const api = await startTestApi({ batch: { idleMs: 60_000, maxMs: 60_000 } });
    try {
      const creates = await Promise.all(Array.from({ length: 40 }, (_, i) => api.client.createNode({ uniqueID: `together-${i}`, pool: "hel1-burst" })));
      assert.ok(creates.every((c) => c.created));
      // How many requests share a commit depends on how their bytes arrive (the unit tests above pin the grouping itself).
      assert.equal(api.app.nodefleet.store.commitStats.writes, 40);
      const twice = await Promise.all([0, 1, 2].map(() => api.client.createNode({ uniqueID: "same-claim", pool: "hel1-burst" })));
      assert.deepEqual(twice.map((t) => t.created).sort(), [false, false, true]);
      assert.equal(new Set(twice.map((t) => t.node.nodeID)).size, 1);
    } finally {
      await api.close();
    }
  });
});
