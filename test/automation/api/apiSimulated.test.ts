/**
 * The scaling API on the simulated engine (the real API stack program in the engine's child
 * process, against a simulated cloud that first received the git stack): out-of-stock server types
 * (NODEFLEET_SIM_OUT_OF_STOCK) become 409 InsufficientCapacity and steer later creates elsewhere,
 * create failures (NODEFLEET_SIM_FAIL_CREATE_RATE) become FAILED with a reason, limits hold, and
 * the preview guard refuses a run that would replace a running member.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { NodefleetApiError } from "../../../automation/client/nodefleetClient";
import { gitStackProgram } from "../../../automation/gitStackProgram";
import { SimulatedEngine } from "../../../automation/simulated/simulatedEngine";
import { eventually, exampleConfig, startTestApi, tempDataDir, type TestApi } from "../../support/apiHarness";

async function simulatedApi(
  knobs: { outOfStock?: string[]; quotaExceeded?: string[]; failCreateRate?: number },
  extra: { programModule?: string; backoffForMs?: number } = {},
) {
  const dataDir = tempDataDir("nodefleet-sim-api-");
  // The example stack's Hetzner Cloud side only: these tests are about the API stack (the whole
  // example stack, Elastic Metal included, is applied by the crash-recovery test through serve).
  const config = exampleConfig();
  const pools = config["nodefleet:pools"]!.value as Array<{ provider: string }>;
  config["nodefleet:pools"] = { value: pools.filter((p) => p.provider === "hcloud") };
  // env: {} so the suite's own environment cannot inject faults; the knobs are given explicitly.
  const engine = new SimulatedEngine({
    dataDir,
    banner: false,
    env: {},
    bootDelayMs: 50,
    outOfStock: knobs.outOfStock ?? [],
    quotaExceeded: knobs.quotaExceeded ?? [],
    failCreateRate: knobs.failCreateRate ?? 0,
  });
  const engineReady = engine.up({ stackName: "example", program: gitStackProgram({ allowMissingKubeconfig: true }), config });
  const api = await startTestApi({
    engine,
    dataDir,
    config,
    engineReady,
    batch: { idleMs: 100, maxMs: 1000 },
    retry: { initialMs: 200, maxMs: 1000 },
    ...extra,
  });
  await engineReady;
  return { api, engine };
}

describe("scaling API on the simulated engine", function () {
  this.timeout(180_000);
  let api: TestApi | undefined;
  afterEach(async () => {
    delete process.env.NODEFLEET_TEST_FORCE_IMAGE;
    await api?.close();
    api = undefined;
  });

  it("maps a sold-out type to 409 InsufficientCapacity, marks it unavailable and creates on the next cheapest", async () => {
    const sim = await simulatedApi({ outOfStock: ["cpx21"] });
    api = sim.api;
    const error = await api.client.createNode({ uniqueID: "sold-out", pool: "hel1-burst" }, { waitSeconds: 120 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof NodefleetApiError, String(error));
    assert.equal(error.status, 409);
    assert.equal(error.code, "InsufficientCapacity");
    assert.match(error.message, /resource_unavailable/);
    const types = await api.client.instanceTypes();
    assert.equal(types.find((t) => t.name === "cpx21")!.offerings[0]!.available, false);
    const next = await api.client.createNode({ uniqueID: "elsewhere", pool: "hel1-burst" }, { waitSeconds: 120 });
    assert.equal(next.node.instanceType, "cpx31");
    assert.equal(next.node.status, "RUNNING");
    assert.match(next.node.ipv4 ?? "", /^203\.0\.113\./);
    assert.match(next.node.privateIpv4 ?? "", /^10\.0\.1\./);
    const servers = sim.engine.cloud.listServers("nodefleet.io/pool=hel1-burst");
    assert.deepEqual(
      servers.map((s) => s.labels["nodefleet.io/node"]),
      [next.node.nodeID],
    );
  });

  it("backs off an offering over quota (NODEFLEET_SIM_QUOTA_EXCEEDED): relaunches get 409 without an engine run, and recover once lifted", async () => {
    const sim = await simulatedApi({ quotaExceeded: ["cpx21"] }, { backoffForMs: 2000 });
    api = sim.api;
    const error = await api.client.createNode({ uniqueID: "over-quota", pool: "hel1-burst" }, { waitSeconds: 120 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof NodefleetApiError, String(error));
    assert.equal(error.code, "InsufficientCapacity");
    assert.match(error.message, /resource_limit_exceeded/);
    const runs = (await api.client.operations()).length;
    for (const uniqueID of ["relaunch-1", "relaunch-2", "relaunch-3"]) {
      await assert.rejects(
        api.client.createNode({ uniqueID, pool: "hel1-burst", instanceType: "cpx21" }),
        (e: unknown) => e instanceof NodefleetApiError && e.status === 409 && e.code === "InsufficientCapacity",
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await api.client.operations()).length, runs, "no engine run per relaunch");
    const offering = (await api.client.instanceTypes()).find((t) => t.name === "cpx21")!.offerings[0]!;
    assert.equal(offering.available, false);
    assert.match(offering.unavailableReason ?? "", /quota/);
    sim.engine.setKnobs({ quotaExceeded: [] });
    await eventually(
      async () => ((await api!.client.instanceTypes()).find((t) => t.name === "cpx21")!.offerings[0]!.available ? true : undefined),
      100,
      100,
    );
    const recovered = await api.client.createNode(
      { uniqueID: "after-quota", pool: "hel1-burst", instanceType: "cpx21" },
      { waitSeconds: 120 },
    );
    assert.equal(recovered.node.status, "RUNNING");
  });

  it("fails members whose create fails with a reason, and enforces the pool limit counting nodes not yet running", async () => {
    const sim = await simulatedApi({ failCreateRate: 1 });
    api = sim.api;
    const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    pools.find((p) => p.name === "hel1-burst")!.limits = { maxNodes: 2 };
    const a = await api.client.createNode({ uniqueID: "fail-a", pool: "hel1-burst" });
    await api.client.createNode({ uniqueID: "fail-b", pool: "hel1-burst" });
    await assert.rejects(
      api.client.createNode({ uniqueID: "fail-c", pool: "hel1-burst" }),
      (e: unknown) => e instanceof NodefleetApiError && e.code === "InsufficientCapacity",
    );
    const failed = await eventually(
      async () => {
        const node = await api!.client.getNode(a.node.nodeID);
        return node.status === "FAILED" ? node : undefined;
      },
      600,
      200,
    );
    assert.ok(failed.failureReason && failed.failureReason.length > 0);
    // Failed members hold no server, so they no longer count against the limit.
    const c = await api.client.createNode({ uniqueID: "fail-c", pool: "hel1-burst" });
    assert.equal(c.created, true);
  });

  it("keeps running members frozen when git changes the pool template, reports drift, and uses the new template for new claims", async () => {
    const sim = await simulatedApi({});
    api = sim.api;
    const { node } = await api.client.createNode({ uniqueID: "frozen", pool: "hel1-burst" }, { waitSeconds: 120 });
    const serverBefore = sim.engine.cloud.listServers(`nodefleet.io/node=${node.nodeID}`);
    assert.equal(serverBefore.length, 1);
    const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    const burst = pools.find((p) => p.name === "hel1-burst")!;
    burst.image = "ubuntu-22.04";
    burst.serverTypes = ["cpx31", "cpx41"];
    (api.config["nodefleet:cluster"]!.value as Record<string, unknown>).k0sVersion = "v1.34.1+k0s.0";
    const fresh = await api.client.createNode({ uniqueID: "fresh", pool: "hel1-burst" }, { waitSeconds: 120 });
    assert.equal(fresh.node.status, "RUNNING");
    assert.equal(fresh.node.instanceType, "cpx31");
    const operations = await api.client.operations();
    assert.equal(operations[0]!.result, "succeeded");
    assert.equal(operations[0]!.summary!.replace + operations[0]!.summary!.delete, 0, "nothing replaced or deleted");
    const serverAfter = sim.engine.cloud.listServers(`nodefleet.io/node=${node.nodeID}`);
    assert.deepEqual(
      serverAfter.map((s) => [s.id, s.name]),
      serverBefore.map((s) => [s.id, s.name]),
    );
    const drifted = await api.client.getNode(node.nodeID);
    assert.equal(drifted.drifted, true);
    for (const reason of [
      /image: ubuntu-24\.04 -> ubuntu-22\.04/,
      /k0sVersion: v1\.33\.4\+k0s\.0 -> v1\.34\.1\+k0s\.0/,
      /serverTypes: cpx21 is no longer allowed/,
    ]) {
      assert.match(drifted.driftDetails ?? "", reason);
    }
    assert.equal(drifted.driftReason, "ServerTypeDrift,ImageDrift,K0sVersionDrift");
    assert.equal((await api.client.getNode(fresh.node.nodeID)).drifted, false);
    const freshServer = sim.engine.cloud.listServers(`nodefleet.io/node=${fresh.node.nodeID}`)[0]!;
    assert.equal(freshServer.serverType, "cpx31");
  });

  it("refuses a run whose preview would replace a running member, reports degraded, and applies nothing", async () => {
    const sim = await simulatedApi({}, { programModule: path.resolve(__dirname, "..", "..", "support", "imageForcingProgram.js") });
    api = sim.api;
    const { node } = await api.client.createNode({ uniqueID: "guarded", pool: "hel1-burst" }, { waitSeconds: 120 });
    assert.equal(node.status, "RUNNING");
    const before = sim.engine.cloud.listServers("nodefleet.io/pool=hel1-burst").map((s) => s.id);
    process.env.NODEFLEET_TEST_FORCE_IMAGE = "debian-12";
    const second = await api.client.createNode({ uniqueID: "after-bug", pool: "hel1-burst" });
    const ready = await eventually(
      async () => {
        const r = await api!.client.readiness();
        return r.body.status === "degraded" ? r : undefined;
      },
      600,
      200,
    );
    assert.match(JSON.stringify(ready.body.details), /preview guard refused the run: it would (replace|delete) example-/);
    const refused = (await api.client.operations()).find((o) => o.result === "failed")!;
    assert.match(refused.error ?? "", new RegExp(node.nodeID));
    assert.deepEqual(
      sim.engine.cloud.listServers("nodefleet.io/pool=hel1-burst").map((s) => s.id),
      before,
      "nothing was replaced or created",
    );
    assert.notEqual((await api.client.getNode(second.node.nodeID)).status, "RUNNING");
  });
});
