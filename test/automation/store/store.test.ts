/**
 * The durable store: real SQLite files in a temp directory. Migrations, claims and the operation
 * log survive a reopen; one service per data directory (the lock file explains who holds it, a
 * dead holder's lock is taken over, and SQLite's exclusive lock stops a second process regardless).
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ClaimStore } from "../../../automation/store/claimStore";
import { DataDirLockedError, acquireDataDirLock } from "../../../automation/store/dataDirLock";
import { MIGRATIONS, databaseFiles, databasePath, openDatabase } from "../../../automation/store/database";
import { OperationLog } from "../../../automation/store/operationLog";
import { StoreDamagedError, StoreLostError } from "../../../automation/store/storeIntegrity";
import { StackStateFile } from "../../../automation/simulated/simulatedCloud";
import { engineStateOf } from "../../../automation/engine/engineState";
import { tempDataDir } from "../../support/apiHarness";
import { newClaim } from "../../support/claimFixture";

describe("store", () => {
  it("migrates a new database, and reopening it runs nothing twice", () => {
    const dir = tempDataDir("nodefleet-store-");
    const db = openDatabase(dir);
    assert.equal(db.pragma("user_version", { simple: true }), MIGRATIONS.length);
    assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
    // NORMAL: the store fsyncs the WAL itself after each commit (walSync.ts), per group for client writes.
    assert.equal(db.pragma("synchronous", { simple: true }), 1, "NORMAL");
    new ClaimStore(db).insert(newClaim("k1"));
    db.close();
    const again = openDatabase(dir);
    assert.equal(new ClaimStore(again).get("example", "k1")?.uniqueId, "u-k1");
    again.close();
    assert.ok(fs.existsSync(databasePath(dir)));
  });

  it("keeps the database and its -wal/-shm files 0600, also tightening a database created 0644", function () {
    if (process.platform === "win32") {
      console.log("      skipped: POSIX file modes");
      this.skip();
    }
    const modeOf = (file: string) => fs.statSync(file).mode & 0o777;
    const previous = process.umask(0o022); // the usual umask, under which SQLite would create 0644 files
    try {
      const dir = tempDataDir("nodefleet-store-mode-");
      const db = openDatabase(dir);
      new ClaimStore(db).insert(newClaim("m1")); // a write, so the WAL file exists while open
      const present = databaseFiles(dir).filter((f) => fs.existsSync(f));
      assert.ok(present.includes(`${databasePath(dir)}-wal`), `expected a WAL file, found ${present.join(", ")}`);
      for (const file of present) assert.equal(modeOf(file).toString(8), "600", file);
      db.close();

      const old = tempDataDir("nodefleet-store-mode-");
      fs.writeFileSync(databasePath(old), "", { mode: 0o644 });
      fs.chmodSync(databasePath(old), 0o644);
      const reopened = openDatabase(old);
      new ClaimStore(reopened).insert(newClaim("m2"));
      for (const file of databaseFiles(old).filter((f) => fs.existsSync(f))) assert.equal(modeOf(file).toString(8), "600", file);
      reopened.close();
    } finally {
      process.umask(previous);
    }
  });

  describe("a lost store", () => {
    function withApiStackState(dir: string): void {
      const file = new StackStateFile(dir, "example-api");
      file.compact({ stack: "example-api", runs: 1, resources: new Map(), outputs: {} });
    }

    it("is refused when nodefleet.db is missing next to the API stack's engine state, naming the file and how to restore", () => {
      const dir = tempDataDir();
      withApiStackState(dir);
      assert.throws(
        () => openDatabase(dir, { engineState: () => engineStateOf(dir, "example-api") }),
        (error: Error) => {
          assert.ok(error instanceof StoreLostError, String(error));
          assert.ok(error.message.includes(databasePath(dir)), error.message);
          assert.match(error.message, /missing/);
          assert.match(error.message, /Restore nodefleet\.db/);
          assert.ok(error.message.includes(path.join("simulated-cloud", "stacks", "example-api.json")));
          return true;
        },
      );
      assert.equal(fs.existsSync(databasePath(dir)), false, "nothing was created");
    });

    it("is refused when nodefleet.db is zero-length next to the API stack's engine state", () => {
      const dir = tempDataDir();
      const db = openDatabase(dir, { engineState: () => engineStateOf(dir, "example-api") });
      new ClaimStore(db).insert(newClaim("k1"));
      db.close();
      withApiStackState(dir);
      for (const file of databaseFiles(dir).slice(1)) fs.rmSync(file, { force: true });
      fs.truncateSync(databasePath(dir), 0);
      assert.throws(
        () => openDatabase(dir, { engineState: () => engineStateOf(dir, "example-api") }),
        (error: Error) => error instanceof StoreLostError && /is empty/.test(error.message),
      );
    });

    it("is not in the way of a first start (no engine state yet) or of another stack's state", () => {
      const dir = tempDataDir();
      new StackStateFile(dir, "example").compact({ stack: "example", runs: 1, resources: new Map(), outputs: {} });
      openDatabase(dir, { engineState: () => engineStateOf(dir, "example-api") }).close();
    });
  });

  it("reports a damaged page at open, naming the file, instead of when a request touches it", () => {
    const dir = tempDataDir();
    const db = openDatabase(dir);
    const store = new ClaimStore(db);
    store.transaction(() => {
      for (let i = 0; i < 500; i++) store.insert(newClaim(`k${i}`));
    });
    db.close();
    const pageSize = 4096;
    const size = fs.statSync(databasePath(dir)).size;
    assert.ok(size > pageSize * 20, `a database of many pages (${size} bytes)`);
    const fd = fs.openSync(databasePath(dir), "r+");
    fs.writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, pageSize * 10);
    fs.closeSync(fd);
    assert.throws(
      () => openDatabase(dir),
      (error: Error) => {
        assert.ok(error instanceof StoreDamagedError, String(error));
        assert.ok(error.message.includes(databasePath(dir)), error.message);
        assert.match(error.message, /damaged/);
        assert.match(error.message, /restore/);
        return true;
      },
    );
  });

  it("stores claims with their snapshot, counts usage of occupying claims and patches status", () => {
    const db = openDatabase(tempDataDir("nodefleet-store-"));
    try {
      const store = new ClaimStore(db);
      store.insert(newClaim("k1"));
      store.insert(newClaim("k2"));
      store.insert(newClaim("k3", "other"));
      assert.deepEqual(store.usage("example", "hel1-burst"), { nodes: 2, cpuMillis: 6000, memoryMiB: 8192 });
      store.update("example", "k2", { status: "FAILED", failureCode: "CreateFailed", failureReason: "boom" });
      assert.equal(store.usage("example", "hel1-burst").nodes, 1, "failed claims hold no server");
      const failed = store.get("example", "k2")!;
      assert.equal(failed.failureReason, "boom");
      assert.deepEqual(failed.snapshot, newClaim("k1").snapshot);
      store.update("example", "k1", { status: "GONE", goneAt: "now" });
      assert.deepEqual(
        store.list("example").map((c) => c.nodeId),
        ["k2", "k3"],
      );
      assert.deepEqual(
        store.list("example", { pool: "other" }).map((c) => c.nodeId),
        ["k3"],
      );
      assert.equal(store.byUniqueId("example", "u-k1")?.status, "GONE");
      assert.throws(() => store.insert({ ...newClaim("k9"), uniqueId: "u-k3" }), /UNIQUE/);
      assert.equal(store.countByStatus("example").PENDING, 1);
      assert.deepEqual(store.usedPlacementSlots("example", "other"), [0]);
      assert.deepEqual(store.usedPlacementSlots("example", "hel1-burst"), [], "failed and gone claims free their slots");
    } finally {
      db.close();
    }
  });

  it("keeps the operation log and marks runs cut short by a crash as abandoned", () => {
    const dir = tempDataDir("nodefleet-store-");
    let db = openDatabase(dir);
    const log = new OperationLog(db);
    const done = log.start("example", "up", ["k1"]);
    log.finish(done, { result: "succeeded", summary: { create: 1, update: 0, replace: 0, delete: 0, same: 0 } });
    log.start("example", "up", ["k2"]);
    db.close();
    db = openDatabase(dir);
    const reopened = new OperationLog(db);
    assert.equal(reopened.abandonUnfinished("crash"), 1);
    const ops = reopened.list("example");
    assert.deepEqual(
      ops.map((o) => o.result),
      ["abandoned", "succeeded"],
    );
    assert.equal(ops[1]!.summary!.create, 1);
    assert.deepEqual(ops[0]!.nodes, ["k2"]);
    db.close();
  });

  describe("one service per data directory", () => {
    it("refuses a second lock in the same process and says who holds it", () => {
      const dir = tempDataDir("nodefleet-lock-");
      const lock = acquireDataDirLock(dir);
      try {
        assert.throws(
          () => acquireDataDirLock(dir),
          (error: unknown) => {
            assert.ok(error instanceof DataDirLockedError);
            assert.match(error.message, new RegExp(`pid ${process.pid}`));
            assert.match(error.message, /--data-dir/);
            return true;
          },
        );
      } finally {
        lock.release();
      }
      acquireDataDirLock(dir).release();
    });

    it("refuses a second process while the holder lives, and takes over the lock of a dead one", () => {
      const dir = tempDataDir("nodefleet-lock-");
      const lock = acquireDataDirLock(dir);
      const script = `require(${JSON.stringify(path.resolve(__dirname, "../../../automation/store/dataDirLock.js"))}).acquireDataDirLock(${JSON.stringify(dir)}); console.log("locked")`;
      try {
        const refused = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
        assert.notEqual(refused.status, 0);
        assert.match(refused.stderr, /in use by another nodefleet service/);
      } finally {
        lock.release();
      }
      // A lock file left by a process that no longer exists (kill -9).
      const dead = spawnSync(process.execPath, ["-e", "process.exit(0)"]);
      fs.writeFileSync(path.join(dir, "nodefleet.lock"), JSON.stringify({ pid: dead.pid, hostname: os.hostname(), startedAt: "earlier" }));
      const takeover = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
      assert.equal(takeover.status, 0, takeover.stderr);
      assert.match(takeover.stdout, /locked/);
    });

    it("holds SQLite's exclusive lock, so another process cannot open the database even without the lock file", () => {
      const dir = tempDataDir("nodefleet-lock-");
      const db = openDatabase(dir);
      try {
        const script = `require(${JSON.stringify(path.resolve(__dirname, "../../../automation/store/database.js"))}).openDatabase(${JSON.stringify(dir)})`;
        const other = spawnSync(process.execPath, ["-e", script], { encoding: "utf8" });
        assert.notEqual(other.status, 0);
        assert.match(other.stderr, /locked by another process/);
      } finally {
        db.close();
      }
    });
  });
});
