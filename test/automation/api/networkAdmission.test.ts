/**
 * Admission against the private network's 100 servers: only members admitted onto the network
 * count (by the network frozen in their snapshot, whatever their pool is now), with the static
 * pools on it; a `network: public` pool has only its own limits.
 */
import { strict as assert } from "node:assert";
import { admit } from "../../../automation/api/admission";
import { apiError, exampleConfig, startTestApi, type TestApi } from "../../support/apiHarness";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { parseFleetSpec, type HcloudAutoscaledPool } from "../../../components/fleet/fleetSpec";
import { configValues } from "../../../automation/stackConfigFile";
import { poolTemplate, drifts, templateHash } from "../../../automation/reconciler/memberSnapshot";
import { shippedCatalog } from "../../../automation/catalog/serverTypes";

type Pools = Array<Record<string, unknown>>;

describe("admission on the private network", function () {
  this.timeout(60_000);
  let api: TestApi;

  beforeEach(async () => {
    const config = exampleConfig();
    const cluster = config["nodefleet:cluster"]!.value as Record<string, unknown>;
    Object.assign(cluster, { nodeAddress: "public", cniEncryption: "cilium-wireguard" });
    api = await startTestApi({ engine: new FakeStackEngine(), config });
  });
  afterEach(async () => api.close());

  const pools = () => api.config["nodefleet:pools"]!.value as Pools;
  const burst = () => pools().find((p) => p.name === "hel1-burst")!;

  it("counts members admitted onto the network after their pool moved to public, and never holds a public pool to it", async () => {
    // On the network: 3 static members, then 5 autoscaled ones.
    for (let i = 0; i < 5; i++) await api.client.createNode({ uniqueID: `on-net-${i}`, pool: "hel1-burst" });
    // The pool moves to public (its 5 members stay on the network), and a new private pool takes the
    // room the spec sees: 3 static + 97 maxNodes = 100.
    Object.assign(burst(), { network: "public", limits: { maxNodes: 300 } });
    pools().push({ ...burst(), name: "hel1-inner", network: "private", limits: { maxNodes: 97 } });
    assert.doesNotThrow(() => parseFleetSpec(configValues(api.config)));

    const store = api.app.nodefleet.store;
    for (let i = 0; i < 92; i++) await api.client.createNode({ uniqueID: `inner-${i}`, pool: "hel1-inner" });
    assert.equal(store.privateNetworkMembers("example"), 97, "5 leftover + 92 new, the 3 static ones come from the spec");
    const refused = await apiError(api.client.createNode({ uniqueID: "inner-full", pool: "hel1-inner" }));
    assert.equal(refused.status, 409);
    assert.equal(refused.code, "InsufficientCapacity");
    assert.deepEqual(refused.details, { pool: "hel1-inner", limit: "network", used: 100 });
    assert.match(refused.message, /pool hel1-inner is on the private network, which holds 100 servers and has 100/);

    // The public pool admits on, past the network's 100, up to its own maxNodes.
    for (let i = 0; i < 10; i++) await api.client.createNode({ uniqueID: `wide-${i}`, pool: "hel1-burst" });
    assert.equal(store.privateNetworkMembers("example"), 97, "public members take no place on the network");
    assert.equal(store.usage("example", "hel1-burst").nodes, 15);
  });

  it("freezes network public and placement none in a member's snapshot, reporting a moved pool as NetworkDrift or PlacementDrift", () => {
    const spec = parseFleetSpec(configValues(api.config));
    const pool = spec.pools.find((p) => p.name === "hel1-burst") as HcloudAutoscaledPool;
    const privateTemplate = poolTemplate(spec.cluster, pool);
    assert.equal("network" in privateTemplate, false, "a private pool's template hashes as before the setting existed");
    const publicTemplate = poolTemplate(spec.cluster, { ...pool, network: "public" });
    assert.equal(publicTemplate.network, "public");
    const snapshot = { template: privateTemplate, serverType: "cpx31", templateHash: templateHash(privateTemplate, "cpx31") };
    assert.deepEqual(
      drifts(snapshot as never, publicTemplate).map((d) => [d.reason, d.detail]),
      [["NetworkDrift", "network: unset -> public"]],
    );
    const unplaced = poolTemplate(spec.cluster, { ...pool, placement: "none" });
    assert.deepEqual(
      drifts(snapshot as never, unplaced).map((d) => d.reason),
      ["PlacementDrift"],
    );
  });

  it("checks the network only for a pool on it, and only when told how full it is", () => {
    const spec = parseFleetSpec(configValues(exampleConfig()));
    const pool = spec.pools.find((p) => p.name === "hel1-burst") as HcloudAutoscaledPool;
    const base = {
      kubelet: spec.cluster.kubelet,
      request: {},
      catalog: shippedCatalog(),
      availability: api.app.nodefleet.availability,
      usage: { nodes: 0, cpuMillis: 0, memoryMiB: 0 },
    };
    assert.throws(() => admit({ ...base, pool, serversOnNetwork: 100 }), /private network, which holds 100 servers and has 100/);
    assert.doesNotThrow(() => admit({ ...base, pool, serversOnNetwork: 99 }));
    assert.doesNotThrow(() => admit({ ...base, pool }));
    assert.doesNotThrow(() => admit({ ...base, pool: { ...pool, network: "public" }, serversOnNetwork: 500 }));
  });
});
