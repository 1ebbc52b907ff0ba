/**
 * The reconcilers with their runs scheduled outside the process (runScheduler.ts, as Temporal
 * schedules them in the scale-out mode), through the scaling API on the fake engine, with a
 * scheduler of the test's: every change is handed to it and nothing runs by itself; a run it hands
 * back converges the claims and answers its summary, a failing run rejects (the scheduler retries),
 * a cancelled one stops the engine and is recorded abandoned, a scheduler that cannot be reached
 * degrades readiness until it can, and a stopping service hands runs back.
 */
import { strict as assert } from "node:assert";
import { setTimeout as sleep } from "node:timers/promises";
import type { DispatchedRuns, RunScheduler } from "../../../automation/reconciler/runScheduler";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, startTestApi, type TestApi } from "../../support/apiHarness";

const POOL = "hel1-burst";

/** The test's scheduler: the changes handed to it, the served clusters' runs, and a switch making hand-overs fail. */
class TestScheduler implements RunScheduler {
  readonly changes: Array<{ clusterId: string; shard: string }> = [];
  readonly served = new Map<string, DispatchedRuns>();
  unreachable: string | undefined;

  readonly dispatch = {
    changed: async (clusterId: string, shard: string) => {
      if (this.unreachable) throw new Error(this.unreachable);
      this.changes.push({ clusterId, shard });
    },
  };

  serve(clusterId: string, runs: DispatchedRuns): () => void {
    this.served.set(clusterId, runs);
    return () => this.served.delete(clusterId);
  }

  run(shard = "0", signal = new AbortController().signal): Promise<string> {
    const runs = this.served.get("example");
    if (!runs) throw new Error("example is not served");
    return runs.runDispatched(shard, signal);
  }
}

describe("engine runs scheduled outside the process (fake engine, fake scheduler)", function () {
  this.timeout(60_000);
  let api: TestApi | undefined;
  let scheduler: TestScheduler;
  let engine: FakeStackEngine;

  beforeEach(async () => {
    scheduler = new TestScheduler();
    engine = new FakeStackEngine();
    api = await startTestApi({ engine, runScheduler: scheduler });
  });
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  const create = async (uniqueID: string) => (await api!.client.createNode({ uniqueID, pool: POOL })).node;

  it("hands every change to the scheduler and runs only what it hands back", async () => {
    const node = await create("d-0");
    await eventually(async () => (scheduler.changes.length > 0 ? true : undefined));
    assert.deepEqual(scheduler.changes[0], { clusterId: "example", shard: "0" });
    // The in-process window (50 ms here) would have run it long ago.
    await sleep(500);
    assert.equal(engine.upStacks.length, 0, "nothing ran without the scheduler");
    assert.equal((await api!.client.getNode(node.nodeID)).status, "PENDING");

    const summary = await scheduler.run();
    assert.match(summary, /^operation \d+: /);
    assert.equal((await api!.client.getNode(node.nodeID)).status, "RUNNING");
    assert.deepEqual(engine.upStacks, ["example-api"]);
    const ups = (await api!.client.operations()).filter((o) => o.kind === "up");
    assert.deepEqual(
      ups.map((o) => o.result),
      ["succeeded"],
    );
    // Nothing left: the next run says so and runs no engine.
    assert.equal(await scheduler.run(), "nothing left to reconcile");
    assert.equal(engine.upStacks.length, 1);
  });

  it("rejects a run that failed as a whole, so the scheduler retries it, and converges on the retry", async () => {
    const node = await create("d-fail");
    engine.transientErrors.push(
      "connect ECONNREFUSED 127.0.0.1:1 (simulated outage)",
      "connect ECONNREFUSED 127.0.0.1:1 (simulated outage)",
    );
    await assert.rejects(scheduler.run(), /ECONNREFUSED/);
    const readiness = await api!.client.readiness();
    assert.equal(readiness.body.status, "degraded");
    while (engine.transientErrors.length > 0) await assert.rejects(scheduler.run(), /ECONNREFUSED/);
    await scheduler.run();
    assert.equal((await api!.client.getNode(node.nodeID)).status, "RUNNING");
    assert.equal((await api!.client.readiness()).body.status, "ready");
  });

  it("stops the engine run when the scheduler cancels it, recorded as abandoned", async () => {
    const node = await create("d-cancel");
    engine.delayMs = 30_000;
    const cancel = new AbortController();
    const running = scheduler.run("0", cancel.signal);
    await eventually(async () => (engine.running > 0 ? true : undefined));
    cancel.abort(new Error("cancelled by the test"));
    await assert.rejects(running, /cancelled by the test/);
    const abandoned = (await api!.client.operations()).filter((o) => o.result === "abandoned");
    assert.equal(abandoned.length, 1, JSON.stringify(await api!.client.operations()));
    assert.match(abandoned[0]!.error ?? "", /cancelled through the run scheduler/);
    assert.equal((await api!.client.readiness()).body.status, "ready", "a cancel is not a failure");
    engine.delayMs = 0;
    await scheduler.run();
    assert.equal((await api!.client.getNode(node.nodeID)).status, "RUNNING");
  });

  it("degrades readiness while the scheduler cannot be reached, and hands the change on once it can", async () => {
    scheduler.unreachable = "14 UNAVAILABLE: connection refused (simulated)";
    await create("d-unreachable");
    await eventually(async () => {
      const { body } = await api!.client.readiness();
      return body.status === "degraded" && /could not hand the change to the run scheduler/.test(JSON.stringify(body)) ? true : undefined;
    });
    assert.equal(scheduler.changes.length, 0);
    scheduler.unreachable = undefined;
    // Sent again with the retry backoff (50 ms at first here).
    await eventually(async () => (scheduler.changes.length > 0 ? true : undefined));
    await eventually(async () => ((await api!.client.readiness()).body.status === "ready" ? true : undefined));
  });

  it("stops serving runs when the service stops, and hands back one that still reaches it", async () => {
    await create("d-stop");
    const served = scheduler.served.get("example")!;
    await api!.close();
    api = undefined;
    assert.equal(scheduler.served.size, 0, "the cluster is no longer served by this process");
    await assert.rejects(served.runDispatched("0", new AbortController().signal), /this replica is stopping; another worker takes the run/);
    assert.equal(engine.upStacks.length, 0);
  });
});
