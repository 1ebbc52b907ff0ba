/**
 * The scaling API's Karpenter-style conformance run (test/support/karpenterConformance.ts, the
 * drive the fake and simulated engines pass in conformance.test.ts) on the automation engine
 * against the local cloud: `nodefleet serve --engine automation` (real pulumi CLI, nodefleet's hcloud plugin, the
 * fake Hetzner API, the real control plane and the node agent), driven only through HTTP. 40
 * NodeClaims (every 4th sent twice) arrive in two batches, one API stack shard each (shards of 20),
 * and the service is killed with SIGKILL, together with the CLI and plugins it started, once right
 * after accepting the first batch and once while a run is creating the second batch's servers in the
 * second shard. After the restarts every claim converges to
 * exactly one server and one Ready Node, the fake's servers are exactly the store's nodes, a sold-out
 * type is refused as InsufficientCapacity, and repeated deletes end in 404 with nothing left behind,
 * one claim's server having been deleted out of band first (in the console, say: the hcloud plugin's
 * delete of it fails with not_found as upstream's, and the service refreshes what it deletes).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { apiStackCheckpoints, memberResourcesIn, stateBytesPerMember } from "../../support/apiStackState";
import { awaitRunning, claimNames, createClaims, deleteUntilGone } from "../../support/karpenterConformance";
import { type HcloudExchange, hcloudOpenApiViolations, recordHcloudExchanges } from "../../support/hcloudOpenApi";
import { UP, allServers, editLocalPools, isReady, poolNodes, poolServers } from "../../support/localFleet";
import { runPulumi } from "../../../automation/local/localStack";
import { localStackProject } from "../../support/localStackProject";
import { until } from "../../support/until";
import { type ServeProcess, crashWithChildren, serveOnLocalCloud, stopServe } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const POOL = "local-burst";
const SOLD_OUT = "cpx21";
const quiet = { info() {}, warn() {} };

describe("the scaling API on the automation engine against the local cloud, killed twice", function () {
  this.timeout(1_200_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;
  const exchanges: HcloudExchange[] = [];

  // Shards of 20: the first batch fills shard 0 and the second (killed during its run) its own shard.
  const start = async () => (serve = await serveOnLocalCloud(join(dir, "serve"), cloud.env, project, { NODEFLEET_SHARD_SIZE: "20" }));
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, intervalMs = 500) =>
    until(what, probe, 600_000, () => `serve said:\n${serve?.stderr().slice(-3000)}`, intervalMs);
  // Karpenter's pace for the 40 claims' Gets and repeated Deletes (each poll is 40 requests).
  const karpenterPace = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 1000);

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-api-local-"));
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 1000,
      logger: quiet,
      projectDir: project,
      env: { ...process.env, NODEFLEET_SIM_OUT_OF_STOCK: SOLD_OUT },
      onFakeHcloud: (fake) => recordHcloudExchanges(fake, exchanges),
    });
    // Only the autoscaled pool, as shipped (room for 40 claims and more, docs/design.md §8.3).
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    await start();
  });

  after(async function () {
    await stopServe(serve);
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const createBatch = (prefix: string, count: number) =>
    createClaims(serve!.client, claimNames(prefix, count), { pool: POOL, instanceType: "cpx31" });

  it("refuses a sold-out type as InsufficientCapacity before any run", async function () {
    // Once the service has read the fake's availability (its catalog refresh), as Karpenter reads the offerings.
    await waitFor(`${SOLD_OUT} offered as unavailable`, async () => {
      const types = await serve!.client.instanceTypes();
      const soldOut = types.filter((t) => t.pool === POOL && t.name === SOLD_OUT);
      return soldOut.length > 0 && soldOut.every((t) => t.offerings.every((o) => !o.available)) ? true : undefined;
    });
    await assert.rejects(
      serve!.client.createNode({ uniqueID: "sold-out", pool: POOL, instanceType: SOLD_OUT }),
      (error: unknown) => error instanceof NodefleetApiError && error.status === 409 && error.code === "InsufficientCapacity",
    );
  });

  it("converges 40 claims to one server and one Ready Node each after a kill before and a kill during a run", async function () {
    // 1. Killed right after the creates were answered, before a run could start.
    const first = await createBatch("first", 20);
    await crashWithChildren(serve!);
    const firstIds = new Set(first);
    assert.deepEqual(
      (await allServers(cloud)).filter((s) => firstIds.has(s.labels["nodefleet.io/node"]!)),
      [],
      "the first kill came before any of the batch's servers was created",
    );
    await start();

    // 2. Killed while the run for the second batch is creating its servers.
    const second = await createBatch("second", 20);
    const secondIds = new Set(second);
    await until(
      "part of the second batch in the fake Hetzner API",
      async () => ((await poolServers(cloud, POOL)).some((s) => secondIds.has(s.labels["nodefleet.io/node"]!)) ? true : undefined),
      300_000,
      () => serve!.stderr().slice(-3000),
    );
    await crashWithChildren(serve!);
    await start();

    const ids = [...first, ...second];
    // The kill left creates in flight: recovery found their servers and adopted them into the state.
    await waitFor("crash recovery adopting the servers of interrupted creates", async () =>
      /"action":"import"/.test(serve!.stderr()) ? true : undefined,
    );
    const running = await awaitRunning(serve!.client, ids, karpenterPace, "nodefleet:///local/");
    assert.deepEqual((await serve!.client.listNodes()).map((n) => n.nodeID).sort(), [...ids].sort(), "the store holds exactly the claims");

    // All of the fake's servers, every page, labelled or not: an orphan of any kind would show.
    const servers = await allServers(cloud);
    const perNode = new Map<string, number>();
    for (const server of servers)
      perNode.set(server.labels["nodefleet.io/node"]!, (perNode.get(server.labels["nodefleet.io/node"]!) ?? 0) + 1);
    assert.deepEqual([...perNode.keys()].sort(), [...ids].sort(), "the fake's servers are the store's nodes: no orphan");
    for (const [node, count] of perNode) assert.equal(count, 1, `${node} has ${count} servers`);
    for (const node of running)
      assert.equal(
        node.instanceID,
        String(servers.find((s) => s.labels["nodefleet.io/node"] === node.nodeID)!.id),
        `${node.nodeID}'s instanceID is its server`,
      );

    await waitFor("a Ready Node per claim", async () => {
      const ready = (await poolNodes(cloud, POOL)).filter(isReady).map((n) => n.spec.providerID);
      return running.every((n) => ready.includes(n.providerID)) ? true : undefined;
    });
    const operations = await serve!.client.operations();
    assert.ok(
      operations.some((o) => o.result === "abandoned"),
      "the run cut short by the kill is recorded as abandoned",
    );
  });

  it("keeps each member within 20 KiB of API stack state: server, token, drain and Node removal, no credentials", async function () {
    const ids = (await serve!.client.listNodes()).map((n) => n.nodeID);
    const checkpoints = apiStackCheckpoints(join(dir, "serve"), "local");
    assert.deepEqual([...checkpoints.keys()].sort(), ["local-api", `local-api-${POOL}-1`], "one stack per shard of 20");
    const bytes = new Map<string, number>();
    for (const text of checkpoints.values()) {
      for (const [nodeId, size] of stateBytesPerMember(text, "local", ids)) bytes.set(nodeId, (bytes.get(nodeId) ?? 0) + size);
    }
    assert.equal(bytes.size, 40);
    for (const [nodeId, size] of bytes) {
      assert.ok(size > 1000, `${nodeId}: its resources were found (${size} bytes)`);
      assert.ok(size <= 20 * 1024, `${nodeId}: ${size} bytes of state, more than 20 KiB`);
    }
    // Where nodefleet is installed must not weigh on every member (withoutSourcePositions.ts).
    const checkpoint = [...checkpoints.values()].join("\n");
    const traced = [...checkpoints.values()]
      .flatMap((text) => memberResourcesIn(text, "local", ids[0]!))
      .filter((r) => r.sourcePosition !== undefined || (r.stackTrace ?? []).length > 0);
    assert.deepEqual(
      traced.map((r) => r.type),
      [],
      "member resources recorded without source positions",
    );
    // The credentials sit once per pool, in the provider's state: never in a member's.
    for (const [stack, text] of checkpoints)
      assert.match(text, /pulumi:providers:nodefleet::/, `${stack}: the pool's nodefleet provider is in the state`);
    assert.doesNotMatch(checkpoint, /pulumi-nodejs:dynamic/, "no member carries a dynamic provider");
  });

  it("deletes them all, one server deleted out of band first, repeated until 404: no server, Node or state entry left", async function () {
    const nodes = await serve!.client.listNodes();
    const ids = nodes.map((n) => n.nodeID);
    assert.equal(ids.length, 40);
    const vanished = await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers/${nodes[0]!.instanceID}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` },
    });
    assert.equal(vanished.status, 200, "the console's delete");
    await deleteUntilGone(serve!.client, ids, karpenterPace);
    assert.deepEqual(await poolServers(cloud, POOL), []);
    await waitFor("no Node of the pool", async () => ((await poolNodes(cloud, POOL)).length === 0 ? true : undefined));
    const state = [...apiStackCheckpoints(join(dir, "serve"), "local").values()].join("\n");
    assert.deepEqual(
      ids.filter((id) => state.includes(id)),
      [],
      "no claim left in any API stack shard's state",
    );
  });

  it("looked the shared network and firewall up once per batch, not once per engine run", async function () {
    const runs = (await serve!.client.operations()).filter((o) => o.nodes.length > 0);
    const lookups = (route: string) => exchanges.filter((e) => e.method === "GET" && e.route === route).length;
    // Each batch is a preview and an up; a kill can cut one short after its look-up.
    for (const route of ["/networks", "/firewalls"]) {
      assert.ok(lookups(route) >= 1, `${route} was looked up`);
      assert.ok(lookups(route) <= Math.ceil(runs.length / 2) + 2, `${lookups(route)} look-ups of ${route} for ${runs.length} engine runs`);
    }
  });

  it("spoke Hetzner's published API in every exchange", function () {
    assert.ok(exchanges.length > 100, `${exchanges.length} exchanges`);
    assert.deepEqual(exchanges.flatMap(hcloudOpenApiViolations), []);
  });
});
