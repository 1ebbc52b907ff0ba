/**
 * One claim-store suite, run against both backends of ClaimRepository: the embedded SQLite store
 * (real files in a temp directory, its group commit) and PostgreSQL (a throwaway cluster on
 * loopback, test/support/postgresServer.ts). Then two replicas on one PostgreSQL database: a create
 * replayed on the other replica is recognised, another body with the same uniqueID is a conflict,
 * and a pool's limit holds while both admit at once.
 */
import { strict as assert } from "node:assert";
import type { CreateNodeBody } from "../../../automation/api/schemas";
import { createRequestHash, isReplayOf } from "../../../automation/api/replayForm";
import type { MemberSnapshot } from "../../../automation/store/claimSnapshot";
import { ClaimStore, type ClaimStatus } from "../../../automation/store/claimStore";
import { SqliteClaimRepository, type AdmissionView, type ClaimRepository, type NewClaim } from "../../../automation/store/claimRepository";
import { openDatabase } from "../../../automation/store/database";
import { PostgresClaimStore } from "../../../automation/store/postgresClaimStore";
import { tempDataDir } from "../../support/apiHarness";
import { suitePostgres } from "../../support/postgresServer";

const CLUSTER = "example";

interface Backend {
  readonly name: string;
  /** A new, empty store; reopen() opens the same data again (after close()). */
  open(): Promise<{ repo: ClaimRepository; reopen: () => Promise<ClaimRepository> }>;
  readonly before?: () => Promise<void>;
  readonly after?: () => Promise<void>;
}

const sqlite: Backend = {
  name: "SQLite",
  open() {
    const dir = tempDataDir("nodefleet-claims-");
    const openAt = (): ClaimRepository => {
      const db = openDatabase(dir);
      return new SqliteClaimRepository(new ClaimStore(db), () => db.close());
    };
    return Promise.resolve({ repo: openAt(), reopen: () => Promise.resolve(openAt()) });
  },
};

const cluster = suitePostgres("the store suite");
const postgres: Backend = {
  name: "PostgreSQL",
  before: () => cluster.before(),
  after: () => cluster.after(),
  async open() {
    const url = await cluster.createDatabase("claims");
    const openAt = () => PostgresClaimStore.open({ connectionString: url });
    return { repo: await openAt(), reopen: openAt };
  },
};

function body(uniqueID: string, pool = "hel1-burst", extra: Partial<CreateNodeBody> = {}): CreateNodeBody {
  return { uniqueID, pool, ...extra } as CreateNodeBody;
}

/** The claim admission would build: 3 vCPU, 4 GiB, in the given slot, shard and network. */
function claimFor(
  request: CreateNodeBody,
  options: { slot?: number; shard?: string; network?: "private" | "public"; status?: ClaimStatus } = {},
): NewClaim {
  const snapshot = {
    serverType: "cpx21",
    location: "hel1",
    placementSlot: options.slot ?? 0,
    template: { network: options.network ?? "private" },
    ...(options.shard !== undefined ? { shard: options.shard } : {}),
  } as unknown as MemberSnapshot;
  return {
    clusterId: CLUSTER,
    nodeId: `n-${request.uniqueID}`,
    uniqueId: request.uniqueID,
    requestHash: createRequestHash(request),
    request,
    pool: request.pool,
    instanceType: "cpx21",
    zone: "hel1",
    snapshot,
    status: options.status ?? "PENDING",
    cpuMillis: 3000,
    memoryMiB: 4096,
  };
}

const requestOf = (request: CreateNodeBody) => ({
  clusterId: CLUSTER,
  uniqueId: request.uniqueID,
  nodeId: `n-${request.uniqueID}`,
  pool: request.pool,
});

/** Admits unconditionally into the next free slot. */
function create(repo: ClaimRepository, request: CreateNodeBody, options: Parameters<typeof claimFor>[1] = {}) {
  return repo.admit(requestOf(request), (view) => claimFor(request, { slot: nextSlot(view.occupancy.placementSlots), ...options }));
}

const nextSlot = (used: readonly number[]) => {
  let slot = 0;
  while (used.includes(slot)) slot += 1;
  return slot;
};

/** Admits up to `limit` nodes in the pool, as admission.ts refuses beyond a pool's maxNodes. */
function createWithin(repo: ClaimRepository, request: CreateNodeBody, limit: number) {
  return repo.admit(requestOf(request), (view: AdmissionView) => {
    if (view.occupancy.usage.nodes >= limit) throw new Error(`pool ${request.pool} is at its limit of ${limit} nodes`);
    return claimFor(request, { slot: nextSlot(view.occupancy.placementSlots) });
  });
}

function claimRepositorySuite(backend: Backend): void {
  describe(`claim store on ${backend.name}`, function () {
    let repo: ClaimRepository;
    let reopen: () => Promise<ClaimRepository>;
    if (backend.before) before(backend.before);
    if (backend.after) after(backend.after);
    beforeEach(async () => {
      ({ repo, reopen } = await backend.open());
    });
    afterEach(async () => {
      await repo.close();
    });

    it("admits a claim and reads it back by node id, by uniqueID and in lists, also after a reopen", async () => {
      const outcome = await create(repo, body("a", "hel1-burst", { labels: { team: "x" } }), { shard: "1" });
      assert.ok("claim" in outcome);
      await repo.durable();
      await repo.close();
      repo = await reopen();
      const stored = await repo.get(CLUSTER, "n-a");
      assert.deepEqual(stored?.request, { uniqueID: "a", pool: "hel1-burst", labels: { team: "x" } });
      assert.equal(stored?.status, "PENDING");
      assert.equal(stored?.snapshot.placementSlot, 0);
      assert.equal(stored?.createdAt, outcome.claim.createdAt);
      assert.equal((await repo.byUniqueId(CLUSTER, "a"))?.nodeId, "n-a");
      assert.equal(await repo.status(CLUSTER, "n-a"), "PENDING");
      assert.equal(await repo.shardOf(CLUSTER, "n-a"), "1");
      assert.equal(await repo.get("other", "n-a"), undefined);
      assert.equal(await repo.status(CLUSTER, "n-missing"), undefined);
    });

    it("answers a replayed uniqueID with the earlier claim, without deciding again", async () => {
      await create(repo, body("r"));
      let decided = 0;
      const again = await repo.admit(requestOf(body("r")), (view) => {
        decided += 1;
        return claimFor(body("r"), { slot: nextSlot(view.occupancy.placementSlots) });
      });
      assert.equal(decided, 0);
      assert.ok("earlier" in again);
      assert.equal(again.earlier.nodeId, "n-r");
      assert.ok(isReplayOf(again.earlier.request as CreateNodeBody, body("r")));
      assert.ok(!isReplayOf(again.earlier.request as CreateNodeBody, body("r", "fsn1-burst")), "another body is a conflict");
    });

    it("writes nothing when the decision throws, and shows the decision a clash on the node id", async () => {
      await assert.rejects(
        repo.admit(requestOf(body("t")), () => {
          throw new Error("refused");
        }),
        /refused/,
      );
      assert.equal(await repo.byUniqueId(CLUSTER, "t"), undefined);
      await create(repo, body("c"));
      let clash: string | undefined;
      await assert.rejects(
        repo.admit({ ...requestOf(body("c2")), nodeId: "n-c" }, (view) => {
          clash = view.clash?.uniqueId;
          throw new Error("conflict");
        }),
      );
      assert.equal(clash, "c");
    });

    it("counts the occupying claims of a pool with their slots and shards, and the private network's members", async () => {
      await create(repo, body("o1"), { shard: "0" });
      await create(repo, body("o2"), { shard: "1", network: "public" });
      await create(repo, body("o3", "fsn1-burst"));
      await create(repo, body("o4"));
      await repo.update(CLUSTER, [{ nodeId: "n-o4", patch: { status: "FAILED", failureCode: "X" } }]);
      const held = await repo.occupancy(CLUSTER, "hel1-burst");
      assert.deepEqual(held.usage, { nodes: 2, cpuMillis: 6000, memoryMiB: 8192 });
      assert.deepEqual([...held.placementSlots].sort(), [0, 1]);
      assert.deepEqual(
        [...held.slotShards.entries()].sort(([a], [b]) => a - b),
        [
          [0, "0"],
          [1, "1"],
        ],
      );
      assert.deepEqual((await repo.occupancy(CLUSTER, "nowhere")).usage, { nodes: 0, cpuMillis: 0, memoryMiB: 0 });
      assert.equal(await repo.privateNetworkMembers(CLUSTER), 2, "o1 and o3: o2 is public, o4 failed");
    });

    it("lists and counts by status, pool and shard, leaving GONE out of lists unless asked", async () => {
      await create(repo, body("l1"));
      await create(repo, body("l2"), { shard: "2" });
      await create(repo, body("l3", "fsn1-burst"), { shard: "2" });
      await repo.update(CLUSTER, [{ nodeId: "n-l2", patch: { status: "RUNNING", instanceId: "42", ipv4: "192.0.2.1" } }]);
      await repo.requestDelete(CLUSTER, "n-l1");
      assert.deepEqual(
        (await repo.list(CLUSTER)).map((c) => c.nodeId),
        ["n-l2", "n-l3"],
      );
      assert.deepEqual(
        (await repo.list(CLUSTER, { statuses: ["GONE"] })).map((c) => c.nodeId),
        ["n-l1"],
      );
      assert.deepEqual(
        (await repo.list(CLUSTER, { pool: "fsn1-burst" })).map((c) => c.nodeId),
        ["n-l3"],
      );
      assert.deepEqual(
        (await repo.list(CLUSTER, { shard: "0", statuses: ["PENDING", "RUNNING", "GONE"] })).map((c) => c.nodeId),
        ["n-l1"],
      );
      const counts = await repo.countByStatus(CLUSTER);
      assert.deepEqual(counts, { PENDING: 1, PROVISIONING: 0, RUNNING: 1, FAILED: 0, TERMINATING: 0, GONE: 1 });
      assert.equal((await repo.countByStatusInShard(CLUSTER, "2")).RUNNING, 1);
      assert.equal((await repo.countByStatusInShard(CLUSTER, "2")).PENDING, 1);
      assert.deepEqual(await repo.shards(CLUSTER, ["PENDING", "RUNNING"]), ["2"]);
      assert.deepEqual(await repo.shards(CLUSTER, ["GONE", "RUNNING"]), ["0", "2"]);
    });

    it("patches claims in one write and clears a field patched to null", async () => {
      await create(repo, body("p1"));
      await create(repo, body("p2"));
      await repo.update(CLUSTER, [
        { nodeId: "n-p1", patch: { status: "FAILED", failureCode: "quota", failureReason: "no servers left" } },
        { nodeId: "n-p2", patch: { status: "RUNNING", instanceId: "7", privateIpv4: "10.0.0.7" } },
      ]);
      await repo.update(CLUSTER, [{ nodeId: "n-p1", patch: { status: "PENDING", failureCode: null, failureReason: null } }]);
      const p1 = await repo.get(CLUSTER, "n-p1");
      assert.equal(p1?.status, "PENDING");
      assert.equal(p1?.failureCode, undefined);
      assert.equal(p1?.failureReason, undefined);
      const p2 = await repo.get(CLUSTER, "n-p2");
      assert.deepEqual([p2?.status, p2?.instanceId, p2?.privateIpv4], ["RUNNING", "7", "10.0.0.7"]);
    });

    it("deletes: PENDING is gone at once, a running claim terminates in its shard, repeats change nothing", async () => {
      await create(repo, body("d1"));
      await create(repo, body("d2"), { shard: "3" });
      await repo.update(CLUSTER, [{ nodeId: "n-d2", patch: { status: "RUNNING" } }]);
      assert.deepEqual(await repo.requestDelete(CLUSTER, "n-d1"), { found: "PENDING" });
      assert.deepEqual(await repo.requestDelete(CLUSTER, "n-d2"), { found: "RUNNING", shard: "3" });
      assert.deepEqual(await repo.requestDelete(CLUSTER, "n-d2"), { found: "TERMINATING" });
      assert.deepEqual(await repo.requestDelete(CLUSTER, "n-d1"), { found: "GONE" });
      assert.deepEqual(await repo.requestDelete(CLUSTER, "n-none"), { found: undefined });
      const d1 = await repo.get(CLUSTER, "n-d1");
      assert.equal(d1?.status, "GONE");
      assert.ok(d1?.goneAt !== undefined && d1.deleteRequestedAt === d1.goneAt);
      const d2 = await repo.get(CLUSTER, "n-d2");
      assert.equal(d2?.status, "TERMINATING");
      assert.ok(d2?.deleteRequestedAt !== undefined && d2.goneAt === undefined);
      // A GONE claim still answers its uniqueID: a replayed create is recognised as deleted.
      assert.equal((await repo.byUniqueId(CLUSTER, "d1"))?.status, "GONE");
    });

    it("shows each of concurrent creates the ones admitted before it: usage, slots, the network, a clash", async () => {
      const seen: Array<{ nodes: number; cpu: number; members: number }> = [];
      const admitOne = (uniqueID: string, network: "private" | "public") =>
        repo.admit(requestOf(body(uniqueID)), (view) => {
          seen.push({ nodes: view.occupancy.usage.nodes, cpu: view.occupancy.usage.cpuMillis, members: view.privateNetworkMembers() });
          return claimFor(body(uniqueID), { slot: nextSlot(view.occupancy.placementSlots), network, shard: uniqueID });
        });
      let clash: string | undefined;
      const outcomes = await Promise.allSettled([
        admitOne("g0", "private"),
        admitOne("g1", "public"),
        admitOne("g2", "private"),
        // Another uniqueID whose node id is g0's, in the same turn: it sees g0 as its clash.
        repo.admit({ ...requestOf(body("g3")), nodeId: "n-g0" }, (view) => {
          clash = view.clash?.uniqueId;
          throw new Error("conflict");
        }),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ["fulfilled", "fulfilled", "fulfilled", "rejected"],
      );
      assert.equal(clash, "g0");
      assert.deepEqual(seen, [
        { nodes: 0, cpu: 0, members: 0 },
        { nodes: 1, cpu: 3000, members: 1 },
        { nodes: 2, cpu: 6000, members: 1 },
      ]);
      const held = await repo.occupancy(CLUSTER, "hel1-burst");
      assert.deepEqual(
        [...held.slotShards].sort(([x], [y]) => x - y),
        [
          [0, "g0"],
          [1, "g1"],
          [2, "g2"],
        ],
      );
    });

    it("holds a pool's limit and gives one claim per uniqueID under concurrent creates", async () => {
      const requests = [...Array(12).keys()].map((i) => body(`c${i % 8}`));
      const outcomes = await Promise.allSettled(requests.map((r) => createWithin(repo, r, 5)));
      const created = outcomes.filter((o) => o.status === "fulfilled" && "claim" in o.value).length;
      assert.equal(created, 5);
      const held = await repo.occupancy(CLUSTER, "hel1-burst");
      assert.equal(held.usage.nodes, 5);
      assert.deepEqual([...held.placementSlots].sort(), [0, 1, 2, 3, 4], "no slot given twice");
    });
  });
}

claimRepositorySuite(sqlite);
claimRepositorySuite(postgres);

describe("two replicas on one PostgreSQL database", function () {
  const shared = suitePostgres("the two-replica store suite");
  let a: PostgresClaimStore;
  let b: PostgresClaimStore;
  before(() => shared.before());
  after(() => shared.after());
  beforeEach(async () => {
    const url = await shared.createDatabase("replicas");
    // Both at once: the migration runs once, under its advisory lock.
    [a, b] = await Promise.all([PostgresClaimStore.open({ connectionString: url }), PostgresClaimStore.open({ connectionString: url })]);
  });
  afterEach(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it("recognises on one replica a create made on the other, and tells another body with that uniqueID", async () => {
    const first = await create(a, body("u1", "hel1-burst", { labels: { team: "x" } }));
    assert.ok("claim" in first);
    const replay = await create(b, body("u1", "hel1-burst", { labels: { team: "x", extra: "y" } }));
    assert.ok("earlier" in replay, "the other replica answers with the first claim");
    assert.equal(replay.earlier.nodeId, first.claim.nodeId);
    assert.ok(isReplayOf(replay.earlier.request as CreateNodeBody, body("u1", "hel1-burst", { labels: { team: "x" } })));
    const other = await create(b, body("u1", "fsn1-burst"));
    assert.ok("earlier" in other);
    assert.ok(!isReplayOf(other.earlier.request as CreateNodeBody, body("u1", "fsn1-burst")), "same uniqueID, another body: a conflict");
    assert.equal((await a.countByStatus(CLUSTER)).PENDING, 1);
  });

  it("makes one claim of the same create sent to both replicas at once", async () => {
    for (let i = 0; i < 10; i++) {
      const outcomes = await Promise.all([create(a, body(`same${i}`)), create(b, body(`same${i}`))]);
      assert.equal(outcomes.filter((o) => "claim" in o).length, 1, `round ${i}`);
    }
    assert.equal((await b.list(CLUSTER)).length, 10);
  });

  it("admits the other creates of a group when one create's row is refused", async () => {
    // jsonb holds no NUL character: that create's INSERT fails, the others' do not.
    const outcomes = await Promise.allSettled([
      create(a, body("ok1")),
      create(a, body("bad"), { shard: "a\u0000b" }),
      create(a, body("ok2")),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ["fulfilled", "rejected", "fulfilled"],
    );
    assert.deepEqual((await b.list(CLUSTER)).map((c) => c.uniqueId).sort(), ["ok1", "ok2"]);
    assert.equal((await a.occupancy(CLUSTER, "hel1-burst")).usage.nodes, 2);
  });

  it("holds a pool's limit and its placement slots while both replicas admit at once", async () => {
    const limit = 6;
    const attempts = [...Array(30).keys()].map((i) => createWithin(i % 2 === 0 ? a : b, body(`l${i}`), limit));
    const outcomes = await Promise.allSettled(attempts);
    const created = outcomes.filter((o) => o.status === "fulfilled").length;
    assert.equal(created, limit);
    for (const o of outcomes) if (o.status === "rejected") assert.match(String(o.reason), /at its limit/);
    const held = await b.occupancy(CLUSTER, "hel1-burst");
    assert.equal(held.usage.nodes, limit);
    assert.deepEqual(
      [...held.placementSlots].sort((x, y) => x - y),
      [0, 1, 2, 3, 4, 5],
      "no slot given twice",
    );
    // A delete on one replica frees room the other admits into.
    const admitted = (await a.list(CLUSTER))[0]!;
    assert.equal((await a.requestDelete(CLUSTER, admitted.nodeId)).found, "PENDING");
    assert.ok("claim" in (await createWithin(b, body("after"), limit)));
  });
});
