/** Group commit on a real SQLite file: writes of one event-loop turn, or arriving during a sync, share one commit; each rolls back alone; answers come after the sync covering them. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { ClaimStore } from "../../../automation/store/claimStore";
import { databaseFiles, openDatabase } from "../../../automation/store/database";
import { GroupCommit } from "../../../automation/store/groupCommit";
import { OperationLog } from "../../../automation/store/operationLog";
import { StoreSyncFailedError, WalSync, walSyncOf } from "../../../automation/store/walSync";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { startTestApi, tempDataDir } from "../../support/apiHarness";
import { newClaim as claim } from "../../support/claimFixture";
import type { NodefleetApiError } from "../../../automation/client/nodefleetClient";

async function eventuallyTrue(check: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 200 && !check(); attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(check(), "condition never held");
}

/** Holds every WAL fsync (or database-file fsync) of the process until released (or failed), as a slow disk would. */
function holdFsyncs(method: "sync" | "syncDatabase" = "sync") {
  const original = WalSync.prototype[method];
  const held: Array<{ release: () => void; fail: (error: Error) => void }> = [];
  WalSync.prototype[method] = function (this: WalSync) {
    return new Promise<void>((resolve, reject) => {
      held.push({ release: () => original.call(this).then(resolve, reject), fail: reject });
    });
  };
  return {
    held,
    releaseAll: () => held.splice(0).forEach((h) => h.release()),
    restore: () => {
      WalSync.prototype[method] = original;
      held.splice(0).forEach((h) => h.release());
    },
  };
}

/** The next fdatasync of the process fails with EIO, as a failing disk would report it to WalSync. */
function failNextFdatasync(): void {
  // The module object itself (an `import * as` namespace is read-only): what walSync.ts calls through.
  const fsModule = module.require("node:fs") as { fdatasync: typeof fs.fdatasync };
  const original = fsModule.fdatasync;
  fsModule.fdatasync = ((_fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    fsModule.fdatasync = original;
    setImmediate(() => callback(Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" })));
  }) as typeof fs.fdatasync;
}

const settledYet = async (promise: Promise<unknown>) => {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  // Several turns of the event loop, and time for a thread-pool fsync that is not held.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return settled;
};

describe("group commit", () => {
  it("durable() waits for the fsync covering what was committed before it, commits nothing itself, and fails with that fsync", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const fsyncs = holdFsyncs();
    try {
      await group.durable();
      const write = group.run(() => store.insert(claim("slow")));
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(group.stats.groups, 1, "committed");
      const durable = group.durable();
      assert.equal(await settledYet(durable), false, "not before the fsync returned");
      assert.equal(group.stats.groups, 1, "durable() adds no commit");
      fsyncs.releaseAll();
      await Promise.all([write, durable]);

      const failing = group.run(() => store.insert(claim("lost")));
      await new Promise((resolve) => setImmediate(resolve));
      const failingDurable = group.durable();
      await new Promise((resolve) => setImmediate(resolve));
      failNextFdatasync();
      fsyncs.held.splice(0).forEach((h) => h.release());
      await assert.rejects(failing, /EIO/);
      await assert.rejects(failingDurable, /EIO/);
      // A failed sync fails the store: nothing later is written or reported durable.
      await assert.rejects(
        group.run(() => store.insert(claim("later"))),
        StoreSyncFailedError,
      );
      await assert.rejects(group.durable(), StoreSyncFailedError);
    } finally {
      fsyncs.restore();
      db.close();
    }
  });

  it("through the API: a GET or a list does not report a create that is committed but not yet fsynced", async () => {
    const api = await startTestApi({ batch: { idleMs: 60_000, maxMs: 60_000 } });
    const fsyncs = holdFsyncs();
    try {
      const create = api.client.createNode({ uniqueID: "not-yet-durable", pool: "hel1-burst" });
      await eventuallyTrue(() => api.app.nodefleet.store.commitStats.groups === 1);
      const get = api.client.getNode(nodeIdFor("not-yet-durable"));
      const list = api.client.listNodes();
      assert.equal(await settledYet(get), false, "the GET waits for the fsync");
      assert.equal(await settledYet(list), false, "the list waits for the fsync");
      assert.equal(await settledYet(create), false, "the create waits for the fsync");
      fsyncs.releaseAll();
      const [created, node, nodes] = await Promise.all([create, get, list]);
      assert.equal(created.created, true);
      assert.equal(node.nodeID, created.node.nodeID);
      assert.deepEqual(
        nodes.map((n) => n.nodeID),
        [created.node.nodeID],
      );
    } finally {
      fsyncs.restore();
      await api.close();
    }
  });

  it("through the API: neither a 404 nor a replay's Conflict reports a delete that is committed but not yet fsynced", async () => {
    const api = await startTestApi({ batch: { idleMs: 60_000, maxMs: 60_000 } });
    const { node } = await api.client.createNode({ uniqueID: "deleted-not-yet-durable", pool: "hel1-burst" });
    const fsyncs = holdFsyncs();
    try {
      // A PENDING claim is gone at once: committed as GONE, its fsync held.
      const deleted = api.client.deleteNode(node.nodeID);
      await eventuallyTrue(() => fsyncs.held.length === 1);
      const get = api.client.getNode(node.nodeID);
      const replay = api.client.createNode({ uniqueID: "deleted-not-yet-durable", pool: "hel1-burst" });
      assert.equal(await settledYet(get), false, "the 404 waits for the fsync");
      assert.equal(await settledYet(replay), false, "the Conflict waits for the fsync");
      fsyncs.releaseAll();
      await deleted;
      await assert.rejects(get, /NodeNotFound|does not exist/);
      await assert.rejects(replay, /has been deleted/);
    } finally {
      fsyncs.restore();
      await api.close();
    }
  });

  it("after a failed fsync refuses every later write and durable read, reports stopping, and a restart recovers what is on disk", async () => {
    const dataDir = tempDataDir();
    let api = await startTestApi({ dataDir, batch: { idleMs: 60_000, maxMs: 60_000 } });
    const kept = await api.client.createNode({ uniqueID: "before-the-failure", pool: "hel1-burst" });
    const fsyncs = holdFsyncs();
    try {
      const lost = api.client.createNode({ uniqueID: "during-the-failure", pool: "hel1-burst" });
      await eventuallyTrue(() => fsyncs.held.length === 1);
      failNextFdatasync();
      fsyncs.held.splice(0).forEach((h) => h.release());
      await assert.rejects(
        lost,
        (error: NodefleetApiError) => error.status === 503 && /whether this request was recorded is unknown/.test(error.message),
      );
      fsyncs.restore();
      // A later sync would succeed, and proves nothing: the store stays failed.
      await assert.rejects(
        api.client.createNode({ uniqueID: "after-the-failure", pool: "hel1-burst" }),
        (error: NodefleetApiError) => error.status === 503,
      );
      await assert.rejects(
        api.client.getNode(kept.node.nodeID),
        (error: NodefleetApiError) => error.status === 503,
        "no read is reported durable",
      );
      await assert.rejects(api.client.listNodes(), (error: NodefleetApiError) => error.status === 503);
      const ready = await fetch(`${api.baseUrl}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(JSON.stringify(await ready.json()), /stopping.*restart the service/);
    } finally {
      fsyncs.restore();
      await api.close();
    }
    api = await startTestApi({ dataDir, batch: { idleMs: 60_000, maxMs: 60_000 } });
    try {
      assert.equal((await api.client.getNode(kept.node.nodeID)).nodeID, kept.node.nodeID);
      assert.equal((await api.client.createNode({ uniqueID: "after-the-restart", pool: "hel1-burst" })).created, true);
      assert.equal((await fetch(`${api.baseUrl}/readyz`)).status, 200);
    } finally {
      await api.close();
    }
  });

  it("through the API: a list served from the last listing's views changes with every create, delete and template edit", async () => {
    const api = await startTestApi({ batch: { idleMs: 60_000, maxMs: 60_000 } });
    try {
      assert.deepEqual(await api.client.listNodes(), []);
      const a = await api.client.createNode({ uniqueID: "listed-a", pool: "hel1-burst" });
      const b = await api.client.createNode({ uniqueID: "listed-b", pool: "hel1-burst" });
      assert.deepEqual(
        (await api.client.listNodes()).map((n) => n.nodeID),
        [a.node.nodeID, b.node.nodeID],
      );
      assert.deepEqual(
        (await api.client.listNodes()).map((n) => n.nodeID),
        [a.node.nodeID, b.node.nodeID],
        "unchanged: the same answer",
      );
      await api.client.deleteNode(a.node.nodeID);
      assert.deepEqual(
        (await api.client.listNodes()).map((n) => n.nodeID),
        [b.node.nodeID],
      );
      await assert.rejects(api.client.getNode(a.node.nodeID), /NodeNotFound|does not exist/);
      const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
      pools.find((p) => p.name === "hel1-burst")!.image = "debian-13";
      const [listed] = await api.client.listNodes();
      assert.equal(listed!.drifted, true, "a template edit is seen by the next listing");
      assert.equal((await api.client.getNode(b.node.nodeID)).drifted, true);
    } finally {
      await api.close();
    }
  });

  it("commits the writes submitted in one turn once, answering each only after the commit", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const answered: boolean[] = [];
    const writes = Array.from({ length: 20 }, (_, i) =>
      group
        .run(() => store.insert(claim(`k${i}`)))
        .then((c) => {
          answered.push(db.inTransaction);
          return c;
        }),
    );
    await Promise.all(writes);
    assert.deepEqual(group.stats, { groups: 1, writes: 20, syncs: 1 });
    assert.ok(
      answered.every((inTransaction) => !inTransaction),
      "answered after the COMMIT",
    );
    assert.equal(store.list("example").length, 20);
    db.close();
  });

  it("answers writes that arrive during a sync after the next one, in order", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const first = group.run(() => store.insert(claim("first")));
    // Next turns: submitted while the first group's sync is still on the thread pool.
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

  it("commits the writes that arrive while a sync is in flight together once it returns, in one transaction and one sync", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    const fsyncs = holdFsyncs();
    try {
      const first = group.run(() => store.insert(claim("first")));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(group.stats, { groups: 1, writes: 1, syncs: 1 });
      // Separate turns of the event loop, all while the first group's sync is held.
      const x = group.run(() => store.insert(claim("x")));
      await new Promise((resolve) => setImmediate(resolve));
      const y = group.run(() => store.insert(claim("y")));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(group.stats, { groups: 1, writes: 1, syncs: 1 }, "nothing commits while the sync runs");
      assert.equal(store.get("example", "x"), undefined);
      assert.equal(await settledYet(x), false);
      fsyncs.held.splice(0).forEach((h) => h.release());
      await first;
      await eventuallyTrue(() => fsyncs.held.length === 1);
      assert.deepEqual(group.stats, { groups: 2, writes: 3, syncs: 2 }, "x and y: one commit, one sync");
      assert.equal(await settledYet(y), false, "answered only after their own sync");
      fsyncs.releaseAll();
      await Promise.all([x, y]);
    } finally {
      fsyncs.restore();
      db.close();
    }
  });

  it("syncs the WAL through one descriptor, closed with the database", async () => {
    const dir = tempDataDir();
    const db = openDatabase(dir);
    const walPath = fs.realpathSync(`${databaseFiles(dir)[1]}`);
    const walDescriptors = () =>
      fs.readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(walPath);
        } catch {
          return false;
        }
      }).length;
    const store = new ClaimStore(db);
    const group = new GroupCommit(db);
    await Promise.all([group.run(() => store.insert(claim("a"))), group.run(() => store.insert(claim("b")))]);
    await group.run(() => store.insert(claim("c")));
    store.transaction(() => store.update("example", "a", { status: "PROVISIONING" }));
    const open = walDescriptors();
    db.close();
    // SQLite's own descriptor of the WAL and ours.
    assert.equal(open, 2, "one descriptor of the store's for every sync so far");
    assert.equal(walDescriptors(), 0, "none left once the database is closed");
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
    assert.deepEqual(
      results.map((r) => r.status),
      ["fulfilled", "rejected", "fulfilled"],
    );
    assert.deepEqual(
      store
        .list("example")
        .map((c) => c.nodeId)
        .sort(),
      ["a", "c"],
    );
    assert.equal(group.stats.groups, 1);
    db.close();
  });

  it("through the API: concurrent creates all go through group commit, and the same uniqueID at once is one 201 and 200 replays", async () => {
    const api = await startTestApi({ batch: { idleMs: 60_000, maxMs: 60_000 } });
    try {
      const creates = await Promise.all(
        Array.from({ length: 40 }, (_, i) => api.client.createNode({ uniqueID: `together-${i}`, pool: "hel1-burst" })),
      );
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

  it("checkpoints between groups without an fsync on the event loop, and commits nothing until the database file's sync returns", async () => {
    const dir = tempDataDir();
    const db = openDatabase(dir);
    const store = new ClaimStore(db);
    const group = new GroupCommit(db, { checkpointEveryWrites: 3 });
    const databaseSyncs = holdFsyncs("syncDatabase");
    try {
      const databaseBytes = () => fs.statSync(databaseFiles(dir)[0]!).size;
      const before = databaseBytes();
      await Promise.all(["a", "b", "c"].map((id) => group.run(() => store.insert(claim(id)))));
      await eventuallyTrue(() => databaseSyncs.held.length === 1);
      assert.equal(group.checkpointCount, 1);
      assert.ok(databaseBytes() > before, "the WAL's pages were copied into the database file");
      assert.equal(walSyncOf(db).checkpointUnsynced, true);
      const d = group.run(() => store.insert(claim("d")));
      assert.equal(await settledYet(d), false, "no write may start the WAL over before the database file is synced");
      assert.equal(group.stats.groups, 1);
      await group.durable(); // what was committed is durable (in the WAL) meanwhile
      databaseSyncs.releaseAll();
      await d;
      assert.equal(walSyncOf(db).checkpointUnsynced, false);
      assert.deepEqual(
        store
          .list("example")
          .map((c) => c.nodeId)
          .sort(),
        ["a", "b", "c", "d"],
      );
      assert.equal(group.stats.groups, 2);
    } finally {
      databaseSyncs.restore();
      db.close();
    }
  });

  it("an operation-log write outside a transaction is durable when it returns; inside one, the transaction's commit syncs it", () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const operations = new OperationLog(db);
    try {
      const id = operations.start("example", "up", ["a"]);
      assert.equal(walSyncOf(db).walUnsyncedWrites, false, "start is synced");
      operations.finish(id, { result: "succeeded" });
      assert.equal(walSyncOf(db).walUnsyncedWrites, false, "finish is synced");
      operations.start("example", "preview", ["b"]);
      assert.equal(operations.abandonUnfinished("crash"), 1);
      assert.equal(walSyncOf(db).walUnsyncedWrites, false, "abandoning is synced");
      store.transaction(() => {
        store.insert(claim("c"));
        operations.start("example", "up", ["c"]);
        assert.equal(walSyncOf(db).walUnsyncedWrites, true, "not synced inside the transaction");
      });
      assert.equal(walSyncOf(db).walUnsyncedWrites, false, "the transaction's commit synced both");
      assert.deepEqual(
        operations.list("example").map((o) => o.result),
        ["running", "abandoned", "succeeded"],
      );
    } finally {
      db.close();
    }
  });

  it("a transaction outside the group commit during a checkpoint's database-file sync syncs that file itself first", async () => {
    const db = openDatabase(tempDataDir());
    const store = new ClaimStore(db);
    const operations = new OperationLog(db);
    const group = new GroupCommit(db, { checkpointEveryWrites: 1 });
    const databaseSyncs = holdFsyncs("syncDatabase");
    try {
      await group.run(() => store.insert(claim("a")));
      await eventuallyTrue(() => databaseSyncs.held.length === 1);
      assert.equal(walSyncOf(db).checkpointUnsynced, true);
      store.transaction(() => store.update("example", "a", { status: "PROVISIONING" }));
      assert.equal(walSyncOf(db).checkpointUnsynced, false, "synced before the transaction began");
      // The group commit still waits for its own sync of that checkpoint.
      const b = group.run(() => store.insert(claim("b")));
      assert.equal(await settledYet(b), false);
      databaseSyncs.releaseAll();
      await b;
      await eventuallyTrue(() => databaseSyncs.held.length === 1);
      assert.equal(walSyncOf(db).checkpointUnsynced, true, "b's checkpoint");
      operations.start("example", "up", ["a"]);
      assert.equal(walSyncOf(db).checkpointUnsynced, false, "the operation log's writes sync it too");
      assert.equal(store.get("example", "a")?.status, "PROVISIONING");
    } finally {
      databaseSyncs.restore();
      db.close();
    }
  });
});
