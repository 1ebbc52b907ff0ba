/**
 * The claims channel between replicas (claimChanges.ts): what a replica's listener hears when
 * another replica's store admits, deletes or settles a claim, on a throwaway PostgreSQL cluster on
 * loopback, and that it hears again after its connection is cut.
 */
import { strict as assert } from "node:assert";
import pg from "pg";
import type { MemberSnapshot } from "../../../automation/store/claimSnapshot";
import {
  CLAIM_CHANGES_CHANNEL,
  parseClaimChange,
  type ClaimChange,
  type ClaimChangeListener,
} from "../../../automation/store/claimChanges";
import { openPostgresStores, type SharedStores } from "../../../automation/store/postgresStores";
import { eventually } from "../../support/apiHarness";
import { suitePostgres } from "../../support/postgresServer";

describe("the claims channel between replicas", function () {
  this.timeout(120_000);

  it("reads a change's payload and ignores one it does not know", () => {
    const change = { clusterId: "c", shard: "2", nodeId: "n1", status: "RUNNING" };
    assert.deepEqual(parseClaimChange(JSON.stringify(change)), change);
    assert.equal(parseClaimChange("not json"), undefined);
    assert.equal(parseClaimChange(undefined), undefined);
    assert.equal(parseClaimChange(JSON.stringify({ ...change, status: "SLEEPING" })), undefined);
    assert.equal(parseClaimChange(JSON.stringify({ ...change, nodeId: 7 })), undefined);
  });

  describe("on PostgreSQL", () => {
    const postgres = suitePostgres("the claims channel");
    let url: string;
    let writer: SharedStores;
    let reader: SharedStores;
    let listener: ClaimChangeListener | undefined;
    const heard: ClaimChange[] = [];
    let listening = 0;
    const lost: string[] = [];

    before(async () => {
      await postgres.before();
      url = await postgres.createDatabase("channel");
      // Two replicas' stores: one writes, the other listens.
      writer = await openPostgresStores({ connectionString: url });
      reader = await openPostgresStores({ connectionString: url });
      listener = await reader.listen({
        onChange: (change) => heard.push(change),
        onListening: () => (listening += 1),
        onLost: (error) => lost.push(error.message),
      });
    });
    after(async () => {
      await listener?.close();
      await writer?.close();
      await reader?.close();
      await postgres.after();
    });

    const admit = (nodeId: string, shard?: string) =>
      writer.claims.admit({ clusterId: "c", uniqueId: `u-${nodeId}`, nodeId, pool: "burst" }, () => ({
        clusterId: "c",
        nodeId,
        uniqueId: `u-${nodeId}`,
        requestHash: "h",
        request: { uniqueID: `u-${nodeId}`, pool: "burst" },
        pool: "burst",
        instanceType: "cpx21",
        zone: "hel1",
        snapshot: { placementSlot: 0, ...(shard ? { shard } : {}) } as unknown as MemberSnapshot,
        status: "PENDING",
        cpuMillis: 3000,
        memoryMiB: 4096,
      }));
    const heardOf = (nodeId: string, status: string) =>
      eventually(async () => (heard.some((c) => c.nodeId === nodeId && c.status === status) ? true : undefined), 100, 50);

    it("hears another replica's admission, with its shard, its delete and a run's outcome, once each committed", async () => {
      assert.equal(listening, 1, "listening once connected");
      await admit("n1");
      await heardOf("n1", "PENDING");
      assert.deepEqual(
        heard.find((c) => c.nodeId === "n1"),
        { clusterId: "c", shard: "0", nodeId: "n1", status: "PENDING" },
      );
      await admit("n2", "3");
      await heardOf("n2", "PENDING");
      assert.equal(heard.find((c) => c.nodeId === "n2")?.shard, "3");
      await writer.claims.update("c", [{ nodeId: "n2", patch: { status: "RUNNING" } }]);
      await heardOf("n2", "RUNNING");
      await writer.claims.requestDelete("c", "n1");
      // A PENDING claim is gone at once.
      await heardOf("n1", "GONE");
    });

    it("hears nothing of a change rolled back", async () => {
      const before = heard.length;
      await assert.rejects(
        writer.claims.admit({ clusterId: "c", uniqueId: "u-n3", nodeId: "n3", pool: "burst" }, () => {
          throw new Error("refused");
        }),
        /refused/,
      );
      await admit("n4");
      await heardOf("n4", "PENDING");
      assert.deepEqual(
        heard.slice(before).map((c) => c.nodeId),
        ["n4"],
      );
    });

    it("listens again after its connection is cut, saying so, and hears what follows", async () => {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        const cut = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", [
          `LISTEN ${CLAIM_CHANGES_CHANNEL}`,
        ]);
        assert.equal(cut.rowCount, 1, "the listener's connection was found and cut");
      } finally {
        await admin.end();
      }
      await eventually(async () => (listening === 2 ? true : undefined), 200, 50);
      assert.ok(lost.length > 0, "the loss was reported");
      await admit("n5");
      await heardOf("n5", "PENDING");
    });
  });
});
