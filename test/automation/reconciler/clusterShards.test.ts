/**
 * A cluster's API stack shards through the scaling API, on the fake engine (one state per stack):
 * members land in the stack of their shard, shards run concurrently within the bound and never
 * twice on one stack, a slow delete in one shard does not hold a create in another, and a restart
 * picks up the unfinished claims of every shard; on both homes of the claims and runs (SQLite, PostgreSQL).
 */
import { strict as assert } from "node:assert";
import type { NodeView } from "../../../automation/client/nodefleetClient";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, tempDataDir, type TestApi } from "../../support/apiHarness";
import { storeBackends } from "../../support/storeBackends";

const POOL = "hel1-burst";

for (const backend of storeBackends())
  describe(`API stack shards (fake engine) (${backend.name})`, function () {
    backend.hooks();
    this.timeout(60_000);
    let api: TestApi | undefined;

    afterEach(async () => {
      await api?.close();
      api = undefined;
    });

    const create = async (uniqueID: string): Promise<NodeView> => (await api!.client.createNode({ uniqueID, pool: POOL })).node;
    const running = (nodeID: string) =>
      eventually(async () => {
        const node = await api!.client.getNode(nodeID);
        return node.status === "RUNNING" ? node : undefined;
      }, 600);

    it("puts each block of 10 slots in its own stack and runs the shards concurrently, at most 2 at once", async () => {
      const engine = new FakeStackEngine();
      engine.delayMs = 1000;
      api = await backend.startApi({ engine, membersPerShard: 10, concurrentShardRuns: 2 });
      const nodes = await Promise.all(Array.from({ length: 25 }, (_, i) => create(`burst-${i}`)));
      await Promise.all(nodes.map((n) => running(n.nodeID)));
      const stackOf = new Map(engine.upStacks.map((stack, i) => [engine.upMembers[i]!.join(","), stack]));
      assert.deepEqual([...new Set(engine.upStacks)].sort(), ["example-api", `example-api-${POOL}-1`, `example-api-${POOL}-2`]);
      for (const [members, stack] of stackOf) {
        const memberCount = members === "" ? 0 : members.split(",").length;
        assert.ok(memberCount <= 10, `${stack} declared ${memberCount} members`);
      }
      assert.equal(engine.servers.size, 25);
      assert.equal(engine.maxConcurrentPerStack, 1, "never two runs on one stack");
      assert.equal(engine.maxConcurrent, 2, "shards ran side by side, within the bound");
    });

    it("creates in one shard while a slow delete runs in another", async () => {
      const engine = new FakeStackEngine();
      api = await backend.startApi({ engine, membersPerShard: 10 });
      const first = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`first-${i}`)));
      await Promise.all(first.map((n) => running(n.nodeID)));
      engine.stackDelays.set("example-api", 5000);
      await api.client.deleteNode(first[0]!.nodeID);
      // Slot 0 is taken until the delete's run ends, so the next member takes slot 10: shard 1.
      const next = await create("next");
      await running(next.nodeID);
      assert.equal((await api.client.getNode(first[0]!.nodeID)).status, "TERMINATING", "the delete's run is still going");
      assert.equal(engine.servers.get(next.nodeID)!.stack, `example-api-${POOL}-1`);
    });

    it("picks up every shard's unfinished claims after a restart", async () => {
      const dataDir = tempDataDir();
      const stalled = new FakeStackEngine();
      stalled.delayMs = 60_000;
      api = await backend.startApi({ engine: stalled, dataDir, membersPerShard: 10, shutdownGraceMs: 100 });
      const nodes = await Promise.all(Array.from({ length: 15 }, (_, i) => create(`restart-${i}`)));
      await eventually(async () => (stalled.running === 2 ? true : undefined));
      await api.close();

      const engine = new FakeStackEngine();
      api = await backend.startApi({ engine, dataDir, membersPerShard: 10 }, api);
      await Promise.all(nodes.map((n) => running(n.nodeID)));
      assert.deepEqual([...new Set(engine.upStacks)].sort(), ["example-api", `example-api-${POOL}-1`]);
    });
  });
