/**
 * The Karpenter-style conformance drive (test/support/karpenterConformance.ts) on the fake and the
 * simulated engines; the same drive runs on the automation engine against the local cloud, with
 * kills between its phases (test/automation/local/apiOnLocalCloud.test.ts). Here the number of
 * engine runs is checked too: it stays small however many NodeClaims arrive together.
 */
import { strict as assert } from "node:assert";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, exampleConfig, startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";
import { type WaitFor, awaitRunning, claimNames, createClaims, deleteUntilGone } from "../../support/karpenterConformance";

/** Drives the API like Karpenter (karpenterConformance.ts); returns the number of engine runs (ups) for the creates and for the deletes. */
async function karpenterConformance(api: TestApi, count: number): Promise<{ createRuns: number; deleteRuns: number }> {
  // Get, and each repeated Delete, every 300 ms.
  const waitFor: WaitFor = (_what, probe) => eventually(probe, 400, 300);
  const nodeIds = await createClaims(api.client, claimNames("default", count), {
    pool: "hel1-burst",
    labels: { "karpenter.sh/nodepool": "default" },
  });
  await awaitRunning(api.client, nodeIds, waitFor, "nodefleet:///example/");
  const ups = async () => (await api.client.operations()).filter((o) => o.kind === "up").length;
  const createRuns = await ups();
  await deleteUntilGone(api.client, nodeIds, waitFor);
  const operations = await api.client.operations();
  assert.ok(
    operations.every((o) => o.result === "succeeded"),
    JSON.stringify(operations.map((o) => o.result)),
  );
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
    config["nodefleet:pools"] = {
      value: (config["nodefleet:pools"]!.value as Array<{ provider: string }>).filter((p) => p.provider === "hcloud"),
    };
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
