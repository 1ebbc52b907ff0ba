/**
 * A full disk under the data directory while the service runs: the store refuses writes with
 * SQLITE_FULL (injected into the store's transactions, as SQLite raises it). Creates answer 503 in
 * the error shape instead of 500, the reconciler keeps retrying with backoff instead of giving up
 * after one error, /readyz reports degraded with the reason, and everything recovers by itself
 * once space returns. An engine whose state writes fail (ENOSPC) degrades the service the same way.
 */
import { strict as assert } from "node:assert";
import type Database from "better-sqlite3";
import type { ClaimStore } from "../../../automation/store/claimStore";
import { walSyncOf } from "../../../automation/store/walSync";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, startTestApi, type TestApi } from "../../support/apiHarness";

const diskFull = () => Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });

/** Makes the store's write transactions fail while `full` is set; counts the attempts. */
function fillDisk(store: ClaimStore): { full: boolean; attempts: number } {
  const state = { full: false, attempts: 0 };
  const original = store.transaction.bind(store);
  store.transaction = <T>(fn: () => T): T => {
    if (state.full) {
      state.attempts += 1;
      throw diskFull();
    }
    return original(fn);
  };
  const grouped = store.commitTogether.bind(store);
  store.commitTogether = <T>(fn: () => T): Promise<T> => {
    if (state.full) {
      state.attempts += 1;
      return Promise.reject(diskFull());
    }
    return grouped(fn);
  };
  return state;
}

describe("reconciler on a full disk", function () {
  this.timeout(30_000);
  let api: TestApi;
  let engine: FakeStackEngine;
  afterEach(async () => api.close());

  it("retries with backoff, reports degraded with the reason, answers creates 503, and recovers when space returns", async () => {
    engine = new FakeStackEngine();
    api = await startTestApi({ engine, batch: { idleMs: 300, maxMs: 1000 }, retry: { initialMs: 50, maxMs: 200 } });
    const disk = fillDisk(api.app.nodefleet.store);
    const { node } = await api.client.createNode({ uniqueID: "before-full", pool: "hel1-burst" });
    disk.full = true;

    const refused = await api.client.raw("POST", "/api/v1/clusters/example/nodes", {
      body: JSON.stringify({ uniqueID: "while-full", pool: "hel1-burst" }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    const error = (refused.body as { error: { code: string; message: string } }).error;
    assert.equal(error.code, "Unavailable");
    assert.match(error.message, /disk .* is full.*retry later/);

    const degraded = await eventually(async () => {
      const ready = await api.client.readiness();
      return ready.body.status === "degraded" ? ready : undefined;
    });
    assert.equal(degraded.status, 200, "degraded is still ready: deletes and reads keep working");
    assert.match(JSON.stringify(degraded.body.details), /disk of the data directory is full/);
    await eventually(() => (disk.attempts >= 4 ? true : undefined), 100, 50);
    assert.equal((await api.client.getNode(node.nodeID)).status, "PENDING");
    assert.equal(engine.ups, 0);

    disk.full = false;
    await eventually(async () => ((await api.client.getNode(node.nodeID)).status === "RUNNING" ? true : undefined));
    await eventually(async () => ((await api.client.readiness()).body.status === "ready" ? true : undefined));
    assert.equal((await api.client.createNode({ uniqueID: "while-full", pool: "hel1-burst" })).created, true);
  });

  it("reports degraded while the engine's runs fail as a whole (ENOSPC writing its state), and recovers", async () => {
    engine = new FakeStackEngine();
    engine.transientErrors = [
      "ENOSPC: no space left on device, write",
      "ENOSPC: no space left on device, write",
      "ENOSPC: no space left on device, write",
    ];
    api = await startTestApi({ engine, retry: { initialMs: 200, maxMs: 400 } });
    const { node } = await api.client.createNode({ uniqueID: "engine-full", pool: "hel1-burst" });
    const degraded = await eventually(async () => {
      const ready = await api.client.readiness();
      return ready.body.status === "degraded" ? ready : undefined;
    });
    assert.match(JSON.stringify(degraded.body.details), /ENOSPC/);
    await eventually(async () => ((await api.client.getNode(node.nodeID)).status === "RUNNING" ? true : undefined));
    assert.equal((await api.client.readiness()).body.status, "ready");
  });

  it("reports degraded while writes fail even when no run has anything to do, and ready once a write succeeds", async () => {
    api = await startTestApi({ retry: { initialMs: 50, maxMs: 200 } });
    // Where SQLite would raise it: before any write of the store, grouped or not.
    const wal = walSyncOf((api.app.nodefleet.store as unknown as { db: Database.Database }).db);
    const beforeWrite = wal.beforeWrite.bind(wal);
    let full = true;
    wal.beforeWrite = () => {
      if (full) throw diskFull();
      beforeWrite();
    };
    const refused = await api.client.raw("POST", "/api/v1/clusters/example/nodes", {
      body: JSON.stringify({ uniqueID: "nothing-pending", pool: "hel1-burst" }),
      headers: { "content-type": "application/json" },
    });
    assert.equal(refused.status, 503);
    const degraded = await api.client.readiness();
    assert.equal(degraded.body.status, "degraded");
    assert.match(JSON.stringify(degraded.body.details), /the last write failed: the disk of the data directory is full/);
    full = false;
    assert.equal((await api.client.createNode({ uniqueID: "nothing-pending", pool: "hel1-burst" })).created, true);
    assert.equal((await api.client.readiness()).body.status, "ready");
  });

  it("is no longer degraded once the claims a failing run was for are deleted", async () => {
    api = await startTestApi({ batch: { idleMs: 50, maxMs: 100 }, retry: { initialMs: 1000, maxMs: 1000 } });
    const disk = fillDisk(api.app.nodefleet.store);
    const { node } = await api.client.createNode({ uniqueID: "given-up", pool: "hel1-burst" });
    disk.full = true;
    await eventually(async () => ((await api.client.readiness()).body.status === "degraded" ? true : undefined));
    // Space returns, and the claim is deleted before the next attempt: that attempt finds nothing to do.
    disk.full = false;
    await api.client.deleteNode(node.nodeID);
    await eventually(async () => ((await api.client.readiness()).body.status === "ready" ? true : undefined));
  });
});
