/**
 * Issue 40 part 2 through `serve`: two replicas of one cluster sharing PostgreSQL, each a worker of
 * one Temporal development server (NODEFLEET_TEMPORAL_ADDRESS, the toolchain's CLI on loopback),
 * on the simulated engine. Creates spread over both are carried out by the stack's workflow (its
 * status query counts the runs), converge with one server each and are listed by `GET /operations`
 * on either replica; a replica killed after admitting creates leaves them to the other; an
 * operator's cancel of the workflow drops its batch, and the next change starts a new one.
 */
import { strict as assert } from "node:assert";
import type { TestWorkflowEnvironment } from "@temporalio/testing";
import { fileBackendUrl } from "../../../automation/engine/fileBackendState";
import { stackRunsStatus, stackRunsWorkflowId } from "../../../automation/temporal/stackRunsClient";
import { stackRunsStatusQuery } from "../../../automation/temporal/stackRunsContract";
import type { stackRuns } from "../../../automation/temporal/stackRunsWorkflow";
import { eventually, tempDataDir } from "../../support/apiHarness";
import { suitePostgres } from "../../support/postgresServer";
import { crash, startServe, stopServe, type ServeProcess } from "../../support/serveProcess";
import { serversByNode } from "../../support/simulatedServers";
import { startTemporalDevServer } from "../../support/temporalDevServer";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

/** Every claim in `ids` is RUNNING as `replica` sees it. */
function allRunning(replica: ServeProcess, ids: readonly string[]): Promise<true> {
  return eventually(
    async () => {
      const running = new Set((await replica.client.listNodes()).filter((n) => n.status === "RUNNING").map((n) => n.nodeID));
      return ids.every((id) => running.has(id)) ? true : undefined;
    },
    900,
    200,
  );
}

describe("serve replicas running their engine runs as Temporal workflows (simulated engine)", function () {
  this.timeout(600_000);
  const postgres = suitePostgres("the Temporal replicas' suite");
  let temporal: TestWorkflowEnvironment | undefined;
  const replicas: ServeProcess[] = [];

  before(async function () {
    skipUnlessAvailable(this, missingTools("temporal"));
    await postgres.before();
    temporal = await startTemporalDevServer();
  });
  after(async () => {
    await Promise.all(replicas.splice(0).map((replica) => stopServe(replica)));
    await temporal?.teardown();
    await postgres.after();
  });

  /** Two replicas on a fresh database and simulated cloud, each a worker of the task queue `queue`. */
  async function twoReplicas(
    name: string,
    extra: Record<string, string> = {},
  ): Promise<{ cloud: string; a: ServeProcess; b: ServeProcess }> {
    const cloud = tempDataDir(`nodefleet-${name}-cloud-`);
    const env = {
      NODEFLEET_DATABASE_URL: await postgres.createDatabase(name),
      NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(cloud),
      NODEFLEET_TEMPORAL_ADDRESS: temporal!.address,
      NODEFLEET_TEMPORAL_TASK_QUEUE: `runs-${name}`,
      NODEFLEET_LOG_LEVEL: "info",
      NODEFLEET_BATCH_IDLE_MS: "200",
      NODEFLEET_BATCH_MAX_MS: "1000",
      ...extra,
    };
    const started = await Promise.all(
      [0, 1].map(() => startServe(tempDataDir(`nodefleet-${name}-replica-`), env, { engine: "simulated", startTimeoutMs: 120_000 })),
    );
    replicas.push(...started);
    for (const replica of started)
      await eventually(async () => ((await replica.client.readiness()).status === 200 ? true : undefined), 300, 200);
    return { cloud, a: started[0]!, b: started[1]! };
  }

  /**
   * Runs of the stack's workflow over all its executions (one continued as new is counted in its
   * successor's); a run finding nothing to do makes no operation.
   */
  async function workflowRuns(clusterId: string, shard: string): Promise<number> {
    let runs = 0;
    for await (const execution of temporal!.client.workflow.list({ query: `WorkflowId = "${stackRunsWorkflowId(clusterId, shard)}"` })) {
      if (execution.status.name === "CONTINUED_AS_NEW") continue;
      const handle = temporal!.client.workflow.getHandle<typeof stackRuns>(execution.workflowId, execution.runId);
      runs += (execution.status.name === "RUNNING" ? await handle.query(stackRunsStatusQuery) : await handle.result()).runs;
    }
    return runs;
  }

  it("carries creates spread over both replicas out as the stack's workflow, one server each", async () => {
    const { cloud, a, b } = await twoReplicas("spread");
    const created: string[] = [];
    for (let wave = 0; wave < 3; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).client.createNode({ uniqueID: `t-${wave}-${i}`, pool: "hel1-burst" })),
      );
      created.push(...answers.map((answer) => answer.node.nodeID));
      await allRunning(wave % 2 === 0 ? b : a, created);
    }
    const replay = await b.client.createNode({ uniqueID: "t-0-0", pool: "hel1-burst" });
    assert.equal(replay.created, false, "a create replayed on the other replica is the same claim");

    const servers = serversByNode(cloud);
    assert.deepEqual(
      created.filter((id) => servers.get(id) !== 1),
      [],
      "every member has exactly one server",
    );
    assert.equal(servers.size, created.length, "no other server");

    // The runs were the workflow's: its executions (one per busy spell) count them, and either replica lists them.
    const runs = await workflowRuns("example", "0");
    assert.ok(runs >= 1, `the workflow ran the stack (${runs} runs)`);
    assert.equal((await stackRunsStatus(temporal!.client, "example", "0")).lastRun?.outcome, "succeeded");
    for (const replica of [a, b]) {
      const ups = (await replica.client.operations()).filter((o) => o.kind === "up");
      assert.ok(ups.length >= 1 && ups.length <= runs, `${ups.length} ups for ${runs} workflow runs`);
      assert.ok(
        ups.every((o) => o.result === "succeeded"),
        JSON.stringify(ups),
      );
      assert.match(replica.stderr(), /engine runs are Temporal workflows/);
    }

    // A replica dies after admitting creates: the other's worker runs them.
    const orphans = await Promise.all([0, 1, 2].map((i) => a.client.createNode({ uniqueID: `t-kill-${i}`, pool: "hel1-burst" })));
    await crash(a);
    const orphaned = orphans.map((o) => o.node.nodeID);
    await allRunning(b, orphaned);
    const after = serversByNode(cloud);
    assert.deepEqual(
      orphaned.map((id) => after.get(id)),
      [1, 1, 1],
      "one server each after the kill",
    );
  });

  it("drops the batch when an operator cancels the stack's workflow, and starts anew with the next change", async () => {
    // A long window, so the cancel lands while the workflow batches (a cancel under way of an engine run: local/scaleOutOnLocalCloud).
    const { a } = await twoReplicas("cancel", { NODEFLEET_BATCH_IDLE_MS: "4000", NODEFLEET_BATCH_MAX_MS: "4000" });
    const first = await a.client.createNode({ uniqueID: "c-0", pool: "hel1-burst" });
    const handle = temporal!.client.workflow.getHandle(stackRunsWorkflowId("example", "0"));
    await eventually(
      async () => ((await stackRunsStatus(temporal!.client, "example", "0")).phase === "batching" ? true : undefined),
      100,
      100,
    );
    await handle.cancel();
    await eventually(async () => ((await handle.describe()).status.name === "CANCELLED" ? true : undefined), 300, 100);
    assert.equal((await a.client.getNode(first.node.nodeID)).status, "PENDING", "the cancelled workflow ran nothing");

    // The next change starts a new execution, which runs both claims.
    const second = await a.client.createNode({ uniqueID: "c-1", pool: "hel1-burst" });
    await allRunning(a, [first.node.nodeID, second.node.nodeID]);
    const described = await handle.describe();
    assert.equal(described.status.name === "RUNNING" || described.status.name === "COMPLETED", true, described.status.name);
  });
});
