/**
 * One run-store suite (runStore.ts), against both backends: the embedded SQLite store (its group
 * commit) and PostgreSQL (a throwaway cluster on loopback, test/support/postgresServer.ts). A run's
 * begin marks and opens its operation in one transaction, its record keeps a delete that arrived
 * during the run, finishes the operation and keeps or drops the fingerprint; then, on PostgreSQL, a
 * delete on another replica racing a run's begin, a run cut short abandoned by the next, and a run
 * told when its lock's connection ends.
 */
import { strict as assert } from "node:assert";
import pg from "pg";
import type { MemberSnapshot } from "../../../automation/store/claimSnapshot";
import { ClaimStore, type ClaimStatus } from "../../../automation/store/claimStore";
import { SqliteClaimRepository, type ClaimRepository, type NewClaim } from "../../../automation/store/claimRepository";
import { openDatabase } from "../../../automation/store/database";
import { GuardFingerprints, type GuardFingerprint } from "../../../automation/store/guardFingerprints";
import { OperationLog } from "../../../automation/store/operationLog";
import { openPostgresStores } from "../../../automation/store/postgresStores";
import type { HeldRunLock, RunStore } from "../../../automation/store/runStore";
import { SqliteRunStore } from "../../../automation/store/sqliteRunStore";
import { eventually, tempDataDir } from "../../support/apiHarness";
import { suitePostgres } from "../../support/postgresServer";

const CLUSTER = "example";

interface Stores {
  readonly claims: ClaimRepository;
  readonly runs: RunStore;
  close(): Promise<void>;
}

interface Backend {
  readonly name: string;
  open(): Promise<Stores>;
  readonly before?: () => Promise<void>;
  readonly after?: () => Promise<void>;
}

const sqlite: Backend = {
  name: "SQLite",
  open() {
    const db = openDatabase(tempDataDir("nodefleet-runs-"));
    const store = new ClaimStore(db);
    return Promise.resolve({
      claims: new SqliteClaimRepository(store),
      runs: new SqliteRunStore(store, new OperationLog(db), new GuardFingerprints(db)),
      close: () => {
        db.close();
        return Promise.resolve();
      },
    });
  },
};

const cluster = suitePostgres("the run store suite");
const postgres: Backend = {
  name: "PostgreSQL",
  before: () => cluster.before(),
  after: () => cluster.after(),
  async open() {
    return openPostgresStores({ connectionString: await cluster.createDatabase("runs") });
  },
};

function claim(id: string, shard = "0"): NewClaim {
  return {
    clusterId: CLUSTER,
    nodeId: `n-${id}`,
    uniqueId: id,
    requestHash: "h",
    request: { uniqueID: id },
    pool: "hel1-burst",
    instanceType: "cpx21",
    zone: "hel1",
    snapshot: { serverType: "cpx21", location: "hel1", shard } as unknown as MemberSnapshot,
    status: "PENDING",
    cpuMillis: 3000,
    memoryMiB: 4096,
  };
}

/** Admits the claims, then gives each the status asked for. */
async function seed(claims: ClaimRepository, statuses: Record<string, ClaimStatus>, shard = "0"): Promise<void> {
  for (const id of Object.keys(statuses))
    await claims.admit({ clusterId: CLUSTER, uniqueId: id, nodeId: `n-${id}`, pool: "hel1-burst" }, () => claim(id, shard));
  await claims.update(
    CLUSTER,
    Object.entries(statuses).map(([id, status]) => ({ nodeId: `n-${id}`, patch: { status } })),
  );
}

const SUMMARY = { create: 2, update: 0, replace: 0, delete: 1, same: 3 };

const FINGERPRINT: GuardFingerprint = { program: "p", config: "c", shared: "s", plugins: "g", state: "t" };

function runStoreSuite(backend: Backend): void {
  describe(`run store on ${backend.name}`, function () {
    let stores: Stores;
    if (backend.before) before(backend.before);
    if (backend.after) after(backend.after);
    beforeEach(async () => {
      stores = await backend.open();
    });
    afterEach(async () => stores.close());

    it(`tells the code of a run the lock it holds across replicas${backend.name === "SQLite" ? " (none on SQLite)" : ""}`, async () => {
      assert.equal(stores.runs.runLockHeld(), undefined, "outside a run");
      const inside = await stores.runs.exclusively(
        CLUSTER,
        "pool-b",
        async () => {
          await new Promise((resolve) => setImmediate(resolve));
          const held = stores.runs.runLockHeld();
          return held && { clusterId: held.clusterId, shard: held.shard, confirmed: await held.confirm(), lost: held.lost.aborted };
        },
        () => false,
      );
      assert.deepEqual(
        inside,
        backend.name === "SQLite" ? undefined : { clusterId: CLUSTER, shard: "pool-b", confirmed: true, lost: false },
      );
      assert.equal(stores.runs.runLockHeld(), undefined, "after the run");
    });

    it("begins nothing when nothing is left to reconcile, and writes no operation", async () => {
      await seed(stores.claims, { r: "RUNNING", f: "FAILED" });
      assert.equal(await stores.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "preview" }), undefined);
      assert.deepEqual(await stores.runs.operations(CLUSTER), []);
    });

    it("marks the shard's PENDING claims PROVISIONING and opens the run's operation over them and the unfinished ones", async () => {
      await seed(stores.claims, { p: "PENDING", v: "PROVISIONING", r: "RUNNING", t: "TERMINATING", f: "FAILED" });
      await seed(stores.claims, { other: "PENDING" }, "1");
      const begun = await stores.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "preview" });
      assert.ok(begun);
      assert.deepEqual(begun.claims.map((c) => [c.nodeId, c.status]).sort(), [
        ["n-p", "PENDING"],
        ["n-r", "RUNNING"],
        ["n-t", "TERMINATING"],
        ["n-v", "PROVISIONING"],
      ]);
      assert.deepEqual(begun.members.map((c) => [c.nodeId, c.status]).sort(), [
        ["n-p", "PROVISIONING"],
        ["n-r", "RUNNING"],
        ["n-v", "PROVISIONING"],
      ]);
      assert.equal(await stores.claims.status(CLUSTER, "n-p"), "PROVISIONING");
      assert.equal(await stores.claims.status(CLUSTER, "n-other"), "PENDING", "another shard's claim is another run's");
      const [operation] = await stores.runs.operations(CLUSTER);
      assert.deepEqual([operation?.id, operation?.kind, operation?.result], [begun.operationId, "preview", "running"]);
      assert.equal(operation?.nodes[0], "n-p", "the PENDING ones first, then the unfinished");
      assert.deepEqual(operation?.nodes.slice(1).sort(), ["n-t", "n-v"]);
    });

    it("records the outcome, keeping a delete that arrived during the run, and finishes the operation with the fingerprint", async () => {
      await seed(stores.claims, { a: "PENDING", b: "PENDING", gone: "TERMINATING" });
      const begun = (await stores.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "up" }))!;
      // Karpenter deletes b while the up creates it.
      assert.equal((await stores.claims.requestDelete(CLUSTER, "n-b")).found, "PROVISIONING");
      const moved = await stores.runs.recordRun({
        clusterId: CLUSTER,
        operationId: begun.operationId,
        updates: [
          { nodeId: "n-a", expectedStatus: "PROVISIONING", patch: { status: "RUNNING", instanceId: "1", ipv4: "192.0.2.1" } },
          { nodeId: "n-b", expectedStatus: "PROVISIONING", patch: { status: "RUNNING", instanceId: "2" } },
          { nodeId: "n-gone", expectedStatus: "TERMINATING", patch: { status: "GONE", goneAt: "2026-12-05T00:00:00.000Z" } },
        ],
        operation: { result: "succeeded", summary: SUMMARY, details: { note: "x" } },
        fingerprintKey: CLUSTER,
        fingerprint: FINGERPRINT,
      });
      assert.deepEqual(moved.sort(), ["n-a", "n-gone"]);
      const a = await stores.claims.get(CLUSTER, "n-a");
      assert.deepEqual([a?.status, a?.instanceId, a?.ipv4], ["RUNNING", "1", "192.0.2.1"]);
      const b = await stores.claims.get(CLUSTER, "n-b");
      assert.deepEqual([b?.status, b?.instanceId], ["TERMINATING", "2"], "the delete wins; the server the run made is remembered");
      assert.equal(await stores.claims.status(CLUSTER, "n-gone"), "GONE");
      const [operation] = await stores.runs.operations(CLUSTER);
      assert.deepEqual([operation?.result, operation?.summary, operation?.details], ["succeeded", SUMMARY, { note: "x" }]);
      assert.ok(operation?.finishedAt);
      assert.deepEqual(await stores.runs.fingerprint(CLUSTER), FINGERPRINT);

      // A failed run drops the fingerprint: the next is guarded.
      await seed(stores.claims, { c: "PENDING" });
      const next = (await stores.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "up" }))!;
      await stores.runs.recordRun({
        clusterId: CLUSTER,
        operationId: next.operationId,
        updates: [{ nodeId: "n-c", expectedStatus: "PROVISIONING", patch: { status: "FAILED", failureCode: "CreateFailed" } }],
        operation: { result: "failed", error: "srv-n-c: boom" },
        fingerprintKey: CLUSTER,
        fingerprint: undefined,
      });
      assert.equal(await stores.runs.fingerprint(CLUSTER), undefined);
      assert.equal((await stores.runs.operations(CLUSTER))[0]?.error, "srv-n-c: boom");
    });

    it("moves a guarded run's operation on: the preview finished, the up opened, or the preview becoming the up", async () => {
      await seed(stores.claims, { a: "PENDING" });
      const begun = (await stores.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "preview" }))!;
      await stores.runs.finishOperation(begun.operationId, { result: "succeeded", summary: SUMMARY });
      const up = await stores.runs.startOperation(CLUSTER, "0", "up", ["n-a"]);
      await stores.runs.finishOperation(up, { result: "failed", error: "refused", details: { violations: [] } });
      const other = await stores.runs.startOperation(CLUSTER, "0", "preview", ["n-a"]);
      await stores.runs.operationBecomesUp(other);
      await stores.runs.finishOperation(other, { result: "abandoned" });
      await stores.runs.operationBecomesUp(other);
      const operations = await stores.runs.operations(CLUSTER);
      assert.deepEqual(
        operations.map((o) => [o.kind, o.result]),
        [
          ["up", "abandoned"],
          ["up", "failed"],
          ["preview", "succeeded"],
        ],
        "newest first",
      );
      assert.deepEqual(await stores.runs.operations("other"), []);
      assert.equal(await stores.runs.fingerprint("other"), undefined);
    });
  });
}

runStoreSuite(sqlite);
runStoreSuite(postgres);

describe("engine runs on one PostgreSQL database shared by two replicas", function () {
  const shared = suitePostgres("the shared run store suite");
  let a: Stores;
  let b: Stores;
  before(() => shared.before());
  after(() => shared.after());
  let url: string;
  beforeEach(async () => {
    url = await shared.createDatabase("run_replicas");
    // Both at once: the migration runs once, under its advisory lock.
    [a, b] = await Promise.all([openPostgresStores({ connectionString: url }), openPostgresStores({ connectionString: url })]);
  });
  afterEach(async () => Promise.all([a.close(), b.close()]));

  it("a delete on one replica racing a run's begin on the other is either seen by the run or sees it", async () => {
    for (let i = 0; i < 20; i++) {
      await seed(a.claims, { [`race${i}`]: "PENDING" });
      const [begun, deleted] = await Promise.all([
        b.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "up" }),
        a.claims.requestDelete(CLUSTER, `n-race${i}`),
      ]);
      const status = await a.claims.status(CLUSTER, `n-race${i}`);
      if (deleted.found === "PENDING") {
        assert.equal(status, "GONE", `round ${i}`);
        assert.ok(!begun?.members.some((c) => c.nodeId === `n-race${i}`), `round ${i}: a gone claim is no member`);
      } else {
        assert.equal(deleted.found, "PROVISIONING", `round ${i}`);
        assert.equal(status, "TERMINATING", `round ${i}: the run's next turn removes the server`);
      }
      if (begun) await b.runs.finishOperation(begun.operationId, { result: "succeeded" });
    }
  });

  it("runs one shard's runs one at a time across replicas, other shards beside them; a stopping replica gives up waiting", async () => {
    const events: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = a.runs.exclusively(
      CLUSTER,
      "0",
      async () => {
        events.push("a starts");
        await held;
        events.push("a ends");
        return "a";
      },
      () => false,
    );
    await eventually(() => (events.includes("a starts") ? true : undefined));
    const second = b.runs.exclusively(
      CLUSTER,
      "0",
      async () => {
        events.push("b runs");
        return "b";
      },
      () => false,
    );
    const otherShard = await b.runs.exclusively(
      CLUSTER,
      "1",
      async () => "shard 1",
      () => false,
    );
    assert.equal(otherShard, "shard 1", "another shard's lock is another lock");
    let stopping = false;
    const givingUp = b.runs.exclusively(
      CLUSTER,
      "0",
      async () => "ran anyway",
      () => stopping,
    );
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.deepEqual(events, ["a starts"], "b waits while a runs the shard");
    stopping = true;
    assert.equal(await givingUp, undefined, "a stopping replica stops waiting");
    release();
    assert.deepEqual(await Promise.all([first, second]), ["a", "b"]);
    assert.deepEqual(events, ["a starts", "a ends", "b runs"]);
  });

  it("hands the shard's run lock to the replica that waited, not back to the one that just ran", async () => {
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const stop = () => false;
    const first = a.runs.exclusively(
      CLUSTER,
      "0",
      async () => {
        order.push("a");
        await held;
      },
      stop,
    );
    await eventually(() => (order.includes("a") ? true : undefined));
    const waiting = b.runs.exclusively(CLUSTER, "0", async () => void order.push("b"), stop);
    // b is queued (more than one of its waits): a then finishes and asks again at once.
    await new Promise((resolve) => setTimeout(resolve, 1200));
    release();
    await first;
    const again = a.runs.exclusively(CLUSTER, "0", async () => void order.push("a again"), stop);
    await Promise.all([waiting, again]);
    assert.deepEqual(order, ["a", "b", "a again"]);
  });

  it("tells a run whose lock's connection ends that it lost the lock, lets another replica take it, and lives on", async () => {
    let lostHeld: HeldRunLock | undefined;
    const running = a.runs.exclusively(
      CLUSTER,
      "0",
      async () => {
        const held = a.runs.runLockHeld()!;
        assert.equal(await held.confirm(), true);
        lostHeld = held;
        await new Promise((resolve) => held.lost.addEventListener("abort", resolve, { once: true }));
        return "stopped";
      },
      () => false,
    );
    await eventually(() => lostHeld);
    // What a restart of PostgreSQL, or its session's end, does to the connection holding the lock.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const terminated = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND pid <> pg_backend_pid()",
      );
      assert.equal(terminated.rowCount, 1);
    } finally {
      await admin.end();
    }
    assert.equal(await running, "stopped", "the run is told, and the replica's process goes on");
    assert.equal(await lostHeld!.confirm(), false);
    const next = await b.runs.exclusively(
      CLUSTER,
      "0",
      async () => b.runs.runLockHeld()!.confirm(),
      () => false,
    );
    assert.equal(next, true, "another replica holds the lock now");
  });

  it("abandons a run of the shard still marked running when the next run of it begins (its replica died)", async () => {
    await seed(a.claims, { x: "PENDING" });
    // Replica a begins the run and never records it.
    const died = (await a.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "up" }))!;
    const next = (await b.runs.beginRun({ clusterId: CLUSTER, shard: "0", kind: "up" }))!;
    assert.deepEqual(
      next.members.map((c) => c.nodeId),
      ["n-x"],
    );
    const operations = await b.runs.operations(CLUSTER);
    assert.deepEqual(
      operations.map((o) => [o.id, o.result]),
      [
        [next.operationId, "running"],
        [died.operationId, "abandoned"],
      ],
    );
  });
});
