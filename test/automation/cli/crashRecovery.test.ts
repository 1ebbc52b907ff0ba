/**
 * Crash recovery of `nodefleet serve` with the simulated engine: the service process is killed
 * with SIGKILL right after accepting requests and again during an engine run, then restarted on
 * the same data directory. Every claim converges and each has exactly one server in the simulated
 * cloud; deletes accepted before a crash are carried out after it. SIGTERM shuts down cleanly, a
 * failed fsync of the store stops the service (exit code 1), and a second instance on the same data
 * directory refuses to start.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { NodefleetApiError, type NodefleetClient } from "../../../automation/client/nodefleetClient";
import { SimulatedCloud } from "../../../automation/simulated/simulatedCloud";
import { TOKEN, eventually, tempDataDir } from "../../support/apiHarness";
import { crash, startServe, type ServeProcess } from "../../support/serveProcess";
import { serversByNode } from "../../support/simulatedServers";

async function allRunning(client: NodefleetClient, nodeIds: readonly string[]): Promise<void> {
  await eventually(
    async () => {
      const nodes = await client.listNodes();
      const running = new Set(nodes.filter((n) => n.status === "RUNNING").map((n) => n.nodeID));
      return nodeIds.every((id) => running.has(id)) ? true : undefined;
    },
    300,
    200,
  );
}

describe("crash recovery and shutdown of nodefleet serve (simulated engine)", function () {
  this.timeout(180_000);
  let serve: ServeProcess | undefined;

  afterEach(async () => {
    if (serve && serve.child.exitCode === null) await crash(serve);
  });

  it("converges every claim with exactly one server after kills right after accepting and during a run", async () => {
    const dataDir = tempDataDir("nodefleet-crash-");
    const start = (env: Record<string, string> = {}) => startServe(dataDir, env);
    serve = await start();
    await eventually(async () => ((await serve!.client.readiness()).status === 200 ? true : undefined), 150, 200);

    // 1. Killed right after the creates were answered, before any run could start.
    const first = Array.from({ length: 8 }, (_, i) => `crash-a-${i}`);
    for (const r of await Promise.all(first.map((uniqueID) => serve!.client.createNode({ uniqueID, pool: "hel1-burst" })))) {
      assert.equal(r.node.status, "PENDING");
    }
    await crash(serve);

    serve = await start();
    const ids = first.map(nodeIdFor);
    await allRunning(serve.client, ids);

    // 2. Killed while a run is in progress: servers take 5 s to boot here (a margin for a busy
    //    machine), and the service is killed as soon as the operations show the batch's up running,
    //    in the middle of its creates; the run is cut short rather than finished or failed first (an
    //    engine made to die after N steps, as before, could record its failure before the kill landed).
    await crash(serve);
    serve = await start({ NODEFLEET_SIM_BOOT_DELAY_MS: "5000" });
    const second = Array.from({ length: 8 }, (_, i) => `crash-b-${i}`);
    await Promise.all(second.map((uniqueID) => serve!.client.createNode({ uniqueID, pool: "hel1-burst" })));
    const secondIds = new Set(second.map(nodeIdFor));
    // The batch's up is running: its servers take 5 s to boot, so the kill lands inside it.
    await eventually(
      async () =>
        (await serve!.client.operations()).some((o) => o.kind === "up" && o.result === "running" && o.nodes.some((id) => secondIds.has(id)))
          ? true
          : undefined,
      3000,
      20,
    );
    await crash(serve);

    // 3. Deletes accepted, then killed at once.
    serve = await start();
    const all = [...ids, ...second.map(nodeIdFor)];
    await allRunning(serve.client, all);
    const doomed = ids.slice(0, 3);
    for (const id of doomed) assert.equal((await serve.client.deleteNode(id)).status, "TERMINATING");
    await crash(serve);

    serve = await start();
    for (const id of doomed) {
      await eventually(
        async () => {
          try {
            await serve!.client.deleteNode(id);
            return undefined;
          } catch (error) {
            return error instanceof NodefleetApiError && error.status === 404 ? true : undefined;
          }
        },
        300,
        200,
      );
    }
    const remaining = all.filter((id) => !doomed.includes(id));
    await allRunning(serve.client, remaining);
    const listed = (await serve.client.listNodes()).map((n) => n.nodeID).sort();
    assert.deepEqual(listed, [...remaining].sort());

    const servers = serversByNode(dataDir);
    assert.deepEqual([...servers.keys()].sort(), [...remaining].sort(), "one server per live claim, none for deleted ones");
    for (const [node, count] of servers) assert.equal(count, 1, `node ${node} has ${count} servers`);
    const operations = await serve.client.operations();
    assert.ok(
      operations.some((o) => o.result === "abandoned"),
      `the run cut short by the kill is recorded as abandoned: ${JSON.stringify(operations.map((o) => [o.kind, o.result, o.nodes.length]))}`,
    );
  });

  it("shuts down on SIGTERM, finishing or abandoning the run in progress, and resumes it after a restart", async () => {
    const dataDir = tempDataDir("nodefleet-crash-");
    serve = await startServe(dataDir, { NODEFLEET_SHUTDOWN_GRACE_MS: "200", NODEFLEET_LOG_LEVEL: "debug" });
    const { node } = await serve.client.createNode({ uniqueID: "graceful", pool: "hel1-burst" });
    await eventually(async () => ((await serve!.client.getNode(node.nodeID)).status === "PROVISIONING" ? true : undefined), 600, 25);
    serve.child.kill("SIGTERM");
    assert.equal(await serve.exited(), 0);
    assert.match(serve.stderr(), /shutting down/);
    assert.ok(!serve.stderr().includes(TOKEN), "the API token never appears in the logs");
    serve = await startServe(dataDir);
    await allRunning(serve.client, [node.nodeID]);
    const operations = await serve.client.operations();
    assert.ok(
      operations.every((o) => o.result !== "running"),
      JSON.stringify(operations),
    );
    assert.equal(operations[0]!.result, "succeeded");
    assert.equal(serversByNode(dataDir).get(node.nodeID), 1);
  });

  it("serve --stack example on a fresh data directory becomes ready, and a second instance on it refuses to start, saying why", async () => {
    const dataDir = tempDataDir("nodefleet-crash-");
    serve = await startServe(dataDir);
    const ready = await eventually(
      async () => {
        const r = await serve!.client.readiness();
        return r.status === 200 ? r : undefined;
      },
      300,
      200,
    );
    assert.equal(ready.body.status, "ready", JSON.stringify(ready.body));
    await assert.rejects(startServe(dataDir), /in use by another nodefleet service \(pid \d+/);
  });

  it("stops with exit code 1 when an fsync of the store fails, answering the write it covered 503, and serves again after a restart", async () => {
    const dataDir = tempDataDir("nodefleet-crash-");
    // The preload fails the next fdatasync once the process gets SIGUSR2 (test/support/failingFsyncPreload.ts).
    const preload = path.join(__dirname, "..", "..", "support", "failingFsyncPreload.js");
    serve = await startServe(dataDir, { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${JSON.stringify(preload)}`.trim() });
    await eventually(async () => ((await serve!.client.readiness()).status === 200 ? true : undefined), 150, 200);
    await serve.client.createNode({ uniqueID: "before-the-failure", pool: "hel1-burst" });
    serve.child.kill("SIGUSR2");
    // Let the signal land before the write it is meant for.
    await new Promise((resolve) => setTimeout(resolve, 200));
    await assert.rejects(serve.client.createNode({ uniqueID: "under-the-failure", pool: "hel1-burst" }), (error: unknown) => {
      assert.ok(error instanceof NodefleetApiError, String(error));
      assert.equal(error.status, 503);
      return true;
    });
    const stillRunning = new Promise((resolve) => setTimeout(() => resolve("still running after 30 s"), 30_000).unref());
    assert.equal(await Promise.race([serve.exited(), stillRunning]), 1, `serve said:\n${serve.stderr()}`);
    assert.match(serve.stderr(), /the store cannot trust its disk any more: restart the service/);
    assert.ok(!fs.existsSync(path.join(dataDir, "nodefleet.lock")), "the lock is released for the restart");

    // The restart recovers from what is on disk: the earlier claim is there, and writes are taken again.
    serve = await startServe(dataDir);
    await serve.client.getNode(nodeIdFor("before-the-failure"));
    assert.equal((await serve.client.createNode({ uniqueID: "after-the-restart", pool: "hel1-burst" })).created, true);
  });

  it("exits with an error when its port is taken, having applied nothing, closing the store and releasing the data directory", async () => {
    const busy = net.createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    try {
      const dataDir = tempDataDir("nodefleet-crash-");
      const port = (busy.address() as net.AddressInfo).port;
      await assert.rejects(startServe(dataDir, {}, { port }), /exited with 1 before listening:[\s\S]*is already in use[\s\S]*--port <n>/);
      assert.ok(!fs.existsSync(path.join(dataDir, "nodefleet.lock")), "the lock is released, not left for the next start to break");
      // The git stack is applied only once the service listens: nothing wrote the simulated cloud's state, now or after the lock was released.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const stacks = path.join(dataDir, "simulated-cloud", "stacks");
      assert.deepEqual(fs.existsSync(stacks) ? fs.readdirSync(stacks) : [], [], "no stack state");
      assert.deepEqual(new SimulatedCloud(dataDir).listServers({}), [], "no server");
    } finally {
      busy.close();
    }
  });
});
