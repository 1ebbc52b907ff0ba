/**
 * An autoscaled pool over several locations (issue #39 part 2): the scaling API offers each server
 * type once per location with its own availability, and a type sold out in one location is created
 * in another, with the fake engine (test/support/fakeStackEngine.ts, `outOfStock` per location).
 */
import { strict as assert } from "node:assert";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { apiError, exampleConfig, startTestApi, type TestApi } from "../../support/apiHarness";

describe("scaling API: a pool over several locations", function () {
  let api: TestApi;
  let engine: FakeStackEngine;

  beforeEach(async () => {
    engine = new FakeStackEngine();
    const config = exampleConfig();
    const pools = config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    const burst = pools.find((p) => p.name === "hel1-burst")!;
    delete burst.location;
    Object.assign(burst, { locations: ["hel1", "fsn1"], placement: "none" });
    api = await startTestApi({ engine, config });
  });
  afterEach(async () => api.close());

  it("offers each server type once per location, in the pool's region", async () => {
    const types = (await api.client.instanceTypes()).filter((t) => t.pool === "hel1-burst");
    assert.deepEqual(
      types.map((t) => t.name),
      ["cpx21", "cpx31", "cpx41", "ccx23"],
    );
    for (const type of types) {
      assert.equal(type.region, "eu-central");
      assert.deepEqual(
        type.offerings.map((o) => [o.zone, o.available]),
        [
          ["hel1", true],
          ["fsn1", true],
        ],
        type.name,
      );
    }
  });

  it("creates a type sold out in one location in the other, and the request's zone decides", async () => {
    engine.outOfStock.add("cpx21@hel1");
    const error = await apiError(api.client.createNode({ uniqueID: "sold-out", pool: "hel1-burst" }, { waitSeconds: 30 }));
    assert.equal(error.status, 409);
    assert.equal(error.code, "InsufficientCapacity");
    const cpx21 = (await api.client.instanceTypes()).find((t) => t.pool === "hel1-burst" && t.name === "cpx21")!;
    assert.deepEqual(
      cpx21.offerings.map((o) => [o.zone, o.available]),
      [
        ["hel1", false],
        ["fsn1", true],
      ],
    );
    const next = await api.client.createNode({ uniqueID: "fallback", pool: "hel1-burst" }, { waitSeconds: 30 });
    assert.equal(next.node.instanceType, "cpx21");
    assert.equal(next.node.zone, "fsn1");
    assert.equal(next.node.labels["topology.kubernetes.io/zone"], "fsn1");
    assert.equal(next.node.labels["topology.kubernetes.io/region"], "eu-central");

    // Asked for hel1, cpx21 is skipped there (sold out) and the next cheapest type is taken in hel1.
    const inHel1 = await api.client.createNode({ uniqueID: "in-hel1", pool: "hel1-burst", zone: "hel1" }, { waitSeconds: 30 });
    assert.deepEqual([inHel1.node.instanceType, inHel1.node.zone], ["cpx31", "hel1"]);
    const pinned = await apiError(api.client.createNode({ uniqueID: "pinned", pool: "hel1-burst", zone: "hel1", instanceType: "cpx21" }));
    assert.equal(pinned.code, "InsufficientCapacity");
    assert.match(pinned.message, /in hel1 is unavailable/);
    const elsewhere = await apiError(api.client.createNode({ uniqueID: "nbg1", pool: "hel1-burst", zone: "nbg1" }));
    assert.equal(elsewhere.code, "NoCompatibleInstanceType");
    assert.match(elsewhere.message, /runs in zone hel1, fsn1, not nbg1/);
  });
});
