/**
 * Two `nodefleet serve` replicas of one cluster on one PostgreSQL database
 * (NODEFLEET_DATABASE_URL, a throwaway cluster on loopback) and one simulated cloud (a `file://`
 * NODEFLEET_API_STACK_BACKEND_URL), with creates spread over both: every claim converges to
 * RUNNING as seen from either replica, no member has two servers (the shard's run lock keeps the
 * replicas' runs of the stack one at a time), and `GET /operations` on either lists the runs of
 * both. The database URL's password never shows in either replica's output. Each replica hears the
 * other's claim changes (claimChanges.ts): a create admitted by a replica that dies before running it
 * is run by the other, and a request waiting on a claim hears of the other replica's run.
 */
import { strict as assert } from "node:assert";
import { fileBackendUrl } from "../../../automation/engine/fileBackendState";
import type { NodefleetClient } from "../../../automation/client/nodefleetClient";
import { eventually, tempDataDir } from "../../support/apiHarness";
import { suitePostgres } from "../../support/postgresServer";
import { crash, startServe, stopServe, type ServeProcess } from "../../support/serveProcess";
import { serversByNode } from "../../support/simulatedServers";

/** Engine runs (ups) a replica made, from its metrics. */
async function upsOf(client: NodefleetClient): Promise<number> {
  const metrics = String((await client.raw("GET", "/metrics")).body);
  const found = [...metrics.matchAll(/^nodefleet_engine_runs_total\{cluster="example",kind="up",result="\w+"\} (\d+)$/gm)];
  return found.reduce((sum, match) => sum + Number(match[1]), 0);
}

describe("two serve replicas sharing PostgreSQL (simulated engine)", function () {
  this.timeout(300_000);
  const postgres = suitePostgres("the replicas' suite");
  const replicas: ServeProcess[] = [];

  before(() => postgres.before());
  after(async () => {
    await Promise.all(replicas.splice(0).map((replica) => stopServe(replica)));
    await postgres.after();
  });

  it("converges creates spread over both with one server each, and lists both replicas' runs", async () => {
    // A password the server does not check (trust authentication): it must not show anywhere.
    const url = (await postgres.createDatabase("replicas")).replace("postgres://nodefleet@", "postgres://nodefleet:sekret-pw-4711@");
    const cloud = tempDataDir("nodefleet-shared-cloud-");
    const env = {
      NODEFLEET_DATABASE_URL: url,
      NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(cloud),
      NODEFLEET_LOG_LEVEL: "info",
      // Small runs, many of them: both replicas get turns on the one stack.
      NODEFLEET_BATCH_IDLE_MS: "100",
      NODEFLEET_BATCH_MAX_MS: "300",
    };
    replicas.push(...(await Promise.all([0, 1].map(() => startServe(tempDataDir("nodefleet-replica-"), env, { engine: "simulated" })))));
    const [a, b] = replicas as [ServeProcess, ServeProcess];
    for (const replica of replicas)
      await eventually(async () => ((await replica.client.readiness()).status === 200 ? true : undefined), 300, 200);

    /** Every created claim is RUNNING as `replica` sees it. */
    const allRunning = (replica: ServeProcess, ids: readonly string[]) =>
      eventually(
        async () => {
          const running = new Set((await replica.client.listNodes()).filter((n) => n.status === "RUNNING").map((n) => n.nodeID));
          return ids.every((id) => running.has(id)) ? true : undefined;
        },
        600,
        200,
      );
    // The first wave to a alone, then (once it runs) the second to b alone, then waves spread over both, at once.
    const replicaFor = (wave: number, i: number) => (wave === 0 ? a : wave === 1 ? b : i % 2 === 0 ? a : b);
    const created: string[] = [];
    for (let wave = 0; wave < 4; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => replicaFor(wave, i).client.createNode({ uniqueID: `spread-${wave}-${i}`, pool: "hel1-burst" })),
      );
      created.push(...answers.map((answer) => answer.node.nodeID));
      if (wave < 2) await allRunning(wave === 0 ? b : a, created);
      else await new Promise((resolve) => setTimeout(resolve, 300));
    }
    // A replayed create on the other replica is the same claim.
    const replay = await b.client.createNode({ uniqueID: "spread-0-0", pool: "hel1-burst" });
    assert.equal(replay.created, false);
    assert.equal(replay.node.nodeID, created[0]);
    for (const replica of replicas) await allRunning(replica, created);

    const servers = serversByNode(cloud);
    assert.deepEqual(
      created.filter((id) => servers.get(id) !== 1),
      [],
      "every member has exactly one server",
    );
    assert.equal(servers.size, created.length, "no other server");

    // Both replicas hear every create (the claims channel) and race for the run lock: which one runs a
    // wave is the lock's choice, and the test below makes one of them run the other's claims.
    const [upsA, upsB] = await Promise.all([upsOf(a.client), upsOf(b.client)]);
    assert.ok(upsA + upsB > 0, `the replicas ran the stack (ups: ${upsA} and ${upsB})`);
    for (const replica of replicas) {
      const ups = (await replica.client.operations()).filter((o) => o.kind === "up");
      assert.equal(ups.length, upsA + upsB, "either replica lists the runs of both");
      assert.ok(
        ups.every((o) => o.result === "succeeded"),
        JSON.stringify(ups.map((o) => o.result)),
      );
    }
    for (const replica of replicas) {
      assert.doesNotMatch(replica.stderr(), /sekret-pw-4711/, "the database password is not logged");
      assert.match(replica.stderr(), /shared PostgreSQL database/);
    }
  });

  it("runs a create on the other replica when the one that admitted it waits or dies, and wakes its waiting request", async () => {
    const url = await postgres.createDatabase("handover");
    const cloud = tempDataDir("nodefleet-handover-cloud-");
    const env = { NODEFLEET_DATABASE_URL: url, NODEFLEET_API_STACK_BACKEND_URL: fileBackendUrl(cloud) };
    // a batches slowly (its window closes 20 s after a create), b at once: b runs what a admits first.
    const a = await startServe(
      tempDataDir("nodefleet-slow-replica-"),
      { ...env, NODEFLEET_BATCH_IDLE_MS: "20000", NODEFLEET_BATCH_MAX_MS: "20000" },
      { engine: "simulated" },
    );
    replicas.push(a);
    const b = await startServe(
      tempDataDir("nodefleet-quick-replica-"),
      { ...env, NODEFLEET_BATCH_IDLE_MS: "100", NODEFLEET_BATCH_MAX_MS: "300" },
      { engine: "simulated" },
    );
    replicas.push(b);
    for (const replica of [a, b])
      await eventually(async () => ((await replica.client.readiness()).status === 200 ? true : undefined), 300, 200);

    // a's request waits on the claim; b runs it (a's window is still open) and a's waiter hears of it.
    const waited = await a.client.createNode({ uniqueID: "handover-wait", pool: "hel1-burst" }, { waitSeconds: 15 });
    assert.equal(waited.node.status, "RUNNING", "a's waiting create answered RUNNING from b's run");
    assert.equal(await upsOf(a.client), 0, "a ran nothing: b ran a's claim");
    assert.ok((await upsOf(b.client)) > 0);

    // a admits a create and dies at once: b runs it all the same.
    const orphaned = await a.client.createNode({ uniqueID: "handover-kill", pool: "hel1-burst" });
    await crash(a);
    await eventually(async () => ((await b.client.getNode(orphaned.node.nodeID)).status === "RUNNING" ? true : undefined), 300, 200);
    const servers = serversByNode(cloud);
    assert.deepEqual(
      [waited.node.nodeID, orphaned.node.nodeID].map((id) => servers.get(id)),
      [1, 1],
      "one server each",
    );
  });
});
