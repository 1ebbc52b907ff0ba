/**
 * A Karpenter-style conformance run against the scaling API, driven only through HTTP as the
 * CloudProvider driver does: many concurrent Creates (some repeating a NodeClaim name), Get polled
 * until RUNNING, List, Delete repeated every few hundred ms until NodeClaimNotFound (404), and the
 * number of engine runs stays small.
 */
import { strict as assert } from "node:assert";
import { NodefleetApiError, type NodeView } from "../../../automation/client/nodefleetClient";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, exampleConfig, startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";

/** Drives the API like Karpenter; returns the number of engine runs (ups) for the creates and for the deletes. */
async function karpenterConformance(api: TestApi, count: number): Promise<{ createRuns: number; deleteRuns: number }> {
  const names = Array.from({ length: count }, (_, i) => `default-${i.toString(36).padStart(3, "0")}`);
  // Karpenter retries Create on timeouts: every 4th name is sent twice, concurrently.
  const requests = [...names, ...names.filter((_, i) => i % 4 === 0)];
  const answers = await Promise.all(
    requests.map((uniqueID) => api.client.createNode({ uniqueID, pool: "hel1-burst", labels: { "karpenter.sh/nodepool": "default" } })),
  );
  const byName = new Map<string, NodeView[]>();
  answers.forEach((answer, i) => byName.set(requests[i]!, [...(byName.get(requests[i]!) ?? []), answer.node]));
  assert.equal(answers.filter((a) => a.created).length, names.length, "exactly one 201 per NodeClaim");
  for (const [name, nodes] of byName) assert.equal(new Set(nodes.map((n) => n.nodeID)).size, 1, `${name} maps to one node`);
  const nodeIds = names.map((name) => byName.get(name)![0]!.nodeID);
  assert.equal(new Set(nodeIds).size, names.length);

  // Get until RUNNING, as the launch/registration loop polls.
  const running = await eventually(
    async () => {
      const nodes = await Promise.all(nodeIds.map((id) => api.client.getNode(id)));
      return nodes.every((n) => n.status === "RUNNING") ? nodes : undefined;
    },
    400,
    250,
  );
  for (const node of running) {
    assert.ok(node.instanceID);
    assert.equal(node.providerID, `nodefleet:///example/${node.nodeID}`);
  }
  const providerIds = new Set(running.map((n) => n.providerID));
  assert.equal(providerIds.size, names.length);

  // List (garbage collection reads it): every providerID is there.
  const listed = await api.client.listNodes();
  assert.deepEqual(new Set(listed.map((n) => n.providerID)), providerIds);

  // Delete, repeated every 300 ms per node until 404.
  const ups = async () => (await api.client.operations()).filter((o) => o.kind === "up").length;
  const createRuns = await ups();
  await Promise.all(
    nodeIds.map(async (id) => {
      for (let attempt = 0; attempt < 400; attempt++) {
        try {
          const answer = await api.client.deleteNode(id);
          assert.equal(answer.status, "TERMINATING");
        } catch (error) {
          if (error instanceof NodefleetApiError && error.status === 404 && error.code === "NodeNotFound") return;
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      throw new Error(`${id} never reached 404`);
    }),
  );
  assert.deepEqual(await api.client.listNodes(), []);
  const operations = await api.client.operations();
  assert.ok(operations.every((o) => o.result === "succeeded"), JSON.stringify(operations.map((o) => o.result)));
  return { createRuns, deleteRuns: (await ups()) - createRuns };
}

describe("Karpenter-style conformance", function () {
  this.timeout(240_000);
  let api: TestApi | undefined;
  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  it("creates, converges, lists and deletes 40 NodeClaims in a handful of engine runs (fake engine)", async () => {
    const engine = new FakeStackEngine();
    engine.delayMs = 250; // each engine call (preview, up) takes a while, as real runs do
    api = await startTestApi({ engine, batch: { idleMs: 200, maxMs: 2000 } });
    const { createRuns, deleteRuns } = await karpenterConformance(api, 40);
    assert.equal(createRuns + deleteRuns, engine.ups);
    assert.ok(createRuns <= 4, `creates took ${createRuns} engine runs`);
    assert.ok(deleteRuns <= 4, `deletes took ${deleteRuns} engine runs despite repeated Delete calls`);
    assert.equal(engine.maxConcurrent, 1);
    assert.equal(engine.servers.size, 0);
  });

  it("does the same against the simulated cloud, leaving no server of the API stack behind", async () => {
    const dataDir = tempDataDir("nodefleet-conformance-");
    const config = exampleConfig();
    // The Hetzner Cloud side of the example stack (the API stack's look-ups need its network and firewall).
    config["nodefleet:pools"] = { value: (config["nodefleet:pools"]!.value as Array<{ provider: string }>).filter((p) => p.provider === "hcloud") };
    const engine = new SimulatedEngine({ dataDir, banner: false, env: {}, bootDelayMs: 50 });
    const engineReady = engine.up({ stackName: "example", program: gitStackProgram({ allowMissingKubeconfig: true }), config });
    api = await startTestApi({ engine, dataDir, config, engineReady, batch: { idleMs: 500, maxMs: 5000 } });
    const { createRuns, deleteRuns } = await karpenterConformance(api, 24);
    assert.ok(createRuns <= 4, `creates took ${createRuns} engine runs`);
    assert.ok(deleteRuns <= 4, `deletes took ${deleteRuns} engine runs despite repeated Delete calls`);
    assert.deepEqual(engine.cloud.listServers("nodefleet.io/pool=hel1-burst"), []);
    assert.equal(engine.cloud.listServers("nodefleet.io/pool=hel1-general").length, 3, "git's servers untouched");
  });
});
