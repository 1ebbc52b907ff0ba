/**
 * Backoff after a create that failed in a way the next would repeat (issue 36 part 3): a quota
 * failure backs off its offering, an unusable image its whole pool; later creates for them get 409
 * InsufficientCapacity at admission, before any engine run (counted on the fake engine), the
 * instance types say why, and creates go through again once the period ends or for other offerings.
 */
import { strict as assert } from "node:assert";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { apiError, eventually, startTestApi, type TestApi } from "../../support/apiHarness";

const QUOTA = "server limit exceeded for this project (resource_limit_exceeded, 1a2b)";
const IMAGE = "image not found for architecture x86 (invalid_input, 3c4d)";
/** Short enough for the test to wait it out. */
const BACKOFF_MS = 1500;

interface RefusedOffering {
  readonly instanceType: string;
  readonly zone: string;
  readonly reason: string;
}

describe("launch backoff in the scaling API", function () {
  this.timeout(60_000);
  let api: TestApi;
  let engine: FakeStackEngine;

  beforeEach(async () => {
    engine = new FakeStackEngine();
    api = await startTestApi({ engine, backoffForMs: BACKOFF_MS });
  });
  afterEach(async () => api.close());

  it("refuses the offering after a quota failure without another engine run, and recovers after the period", async () => {
    engine.createErrors.set("cpx21", QUOTA);
    const first = await apiError(
      api.client.createNode({ uniqueID: "quota-1", pool: "hel1-burst", instanceType: "cpx21" }, { waitSeconds: 30 }),
    );
    assert.equal(first.status, 409);
    assert.equal(first.code, "InsufficientCapacity");
    assert.match(first.message, /quota/);
    const failed = await api.client.getNode(nodeIdFor("quota-1"));
    assert.equal(failed.status, "FAILED");
    assert.equal(failed.failureCode, "InsufficientCapacity");
    const upsAfterFailure = engine.ups;

    // Relaunches (Karpenter's new NodeClaims) for the same offering: refused at admission, no run.
    for (const uniqueID of ["quota-2", "quota-3", "quota-4"]) {
      const again = await apiError(api.client.createNode({ uniqueID, pool: "hel1-burst", instanceType: "cpx21" }));
      assert.equal(again.status, 409);
      assert.equal(again.code, "InsufficientCapacity");
      const offerings = (again.details as { offerings?: RefusedOffering[] }).offerings;
      assert.deepEqual(
        offerings?.map((o) => [o.instanceType, o.zone]),
        [["cpx21", "hel1"]],
      );
      assert.match(offerings![0]!.reason, /quota/);
      await apiError(api.client.getNode(nodeIdFor(uniqueID)));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(engine.ups, upsAfterFailure, "no engine run for a refused relaunch");

    const types = await api.client.instanceTypes();
    const cpx21 = types.find((t) => t.name === "cpx21")!.offerings[0]!;
    assert.equal(cpx21.available, false);
    assert.match(cpx21.unavailableReason ?? "", /quota/);
    const cpx31 = types.find((t) => t.name === "cpx31")!.offerings[0]!;
    assert.equal(cpx31.available, true);
    assert.equal(cpx31.unavailableReason, undefined);

    // Without a named type the cheapest offering not backed off is chosen.
    const elsewhere = await api.client.createNode({ uniqueID: "quota-elsewhere", pool: "hel1-burst" }, { waitSeconds: 30 });
    assert.equal(elsewhere.node.instanceType, "cpx31");
    assert.equal(elsewhere.node.status, "RUNNING");

    // The quota raised (the knob lifted) and the period over: the offering is tried again.
    engine.createErrors.clear();
    const recovered = await eventually(
      async () => {
        const types = await api.client.instanceTypes();
        return types.find((t) => t.name === "cpx21")!.offerings[0]!.available ? true : undefined;
      },
      50,
      100,
    );
    assert.equal(recovered, true);
    const after = await api.client.createNode(
      { uniqueID: "quota-recovered", pool: "hel1-burst", instanceType: "cpx21" },
      { waitSeconds: 30 },
    );
    assert.equal(after.node.status, "RUNNING");
  });

  it("backs off the whole pool after an unusable image: every type refused before any run, with the reason", async () => {
    engine.createErrors.set("*", IMAGE);
    const first = await apiError(api.client.createNode({ uniqueID: "image-1", pool: "hel1-burst" }, { waitSeconds: 30 }));
    assert.equal(first.code, "InsufficientCapacity");
    const ups = engine.ups;
    for (const instanceType of [undefined, "cpx31", "cpx41"]) {
      const again = await apiError(
        api.client.createNode({
          uniqueID: `image-${instanceType ?? "any"}`,
          pool: "hel1-burst",
          ...(instanceType ? { instanceType } : {}),
        }),
      );
      assert.equal(again.status, 409);
      assert.equal(again.code, "InsufficientCapacity");
      const details = again.details as { limit?: string; kind?: string; offerings?: RefusedOffering[] };
      assert.equal(details.limit, "backoff");
      assert.equal(details.kind, "image");
      assert.ok((details.offerings ?? []).length > 0);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(engine.ups, ups, "no engine run while the pool is backed off");
    const types = await api.client.instanceTypes();
    for (const type of types.filter((t) => t.pool === "hel1-burst")) {
      assert.equal(type.offerings[0]!.available, false, type.name);
      assert.match(type.offerings[0]!.unavailableReason ?? "", /image/, type.name);
    }
  });

  it("answers a replay of a failed create with the FAILED node, and of a deleted one with a Conflict marked GONE, neither with a run", async () => {
    engine.createErrors.set("cpx21", QUOTA);
    await apiError(api.client.createNode({ uniqueID: "burned", pool: "hel1-burst", instanceType: "cpx21" }, { waitSeconds: 30 }));
    const ups = engine.ups;
    const replay = await api.client.createNode({ uniqueID: "burned", pool: "hel1-burst", instanceType: "cpx21" });
    assert.equal(replay.created, false);
    assert.equal(replay.node.status, "FAILED");
    assert.equal(engine.ups, ups, "a replay runs nothing");
    await api.client.deleteNode(nodeIdFor("burned"));
    await eventually(async () => ((await apiError(api.client.getNode(nodeIdFor("burned")))).code === "NodeNotFound" ? true : undefined));
    const gone = await apiError(api.client.createNode({ uniqueID: "burned", pool: "hel1-burst", instanceType: "cpx21" }));
    assert.equal(gone.code, "Conflict");
    assert.equal((gone.details as { status?: string }).status, "GONE");
  });
});
