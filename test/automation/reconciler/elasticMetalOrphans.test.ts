/**
 * Issue 37 part 5: the orphan reclaimer for Elastic Metal, against the local cloud's fake Scaleway
 * API. A server tagged with the cluster is deleted after the grace period unless git's stack
 * declares its member or the cluster still has its Node; every zone is looked at, every page read;
 * dry run deletes nothing, and without Nodes to check nothing is deleted.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { elasticMetalInventory, elasticMetalKnownNodes } from "../../../automation/reconciler/elasticMetalOrphans";
import { OrphanReclaimer } from "../../../automation/reconciler/orphanReclaimer";
import { ElasticMetalApi, scalewayAccessFromEnv } from "../../../automation/scaleway/elasticMetalApi";
import { parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { memberTags, orderElasticMetalServer } from "../../support/fakeScalewayServers";
import { elasticMetalPoolConfig, rawFleetConfig } from "../../support/fleetConfigFixture";

const SCW_KEY = "6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b";
const PROJECT = "11111111-2222-4333-a444-555555555555";

describe("Elastic Metal orphan reclaimer", function () {
  this.timeout(30_000);
  let directory: string;
  let scaleway: FakeScaleway;
  let apiUrl: string;
  const fleet = parseFleetSpec(rawFleetConfig({ pools: [elasticMetalPoolConfig({ name: "gpu", replicas: 2 })] }));
  const cluster = fleet.cluster.id;
  const tagsOf = (pool: string, nodeId: string, clusterId = cluster) => memberTags(clusterId, pool, nodeId);
  const order = (zone: string, name: string, tags: string[]) =>
    orderElasticMetalServer({ apiUrl, secretKey: SCW_KEY, projectId: PROJECT }, zone, name, tags);

  const names = () =>
    scaleway.state
      .all("servers")
      .map((s) => s.name)
      .sort();

  function reclaimer(nodeNames: () => Promise<readonly string[]>, dryRun = false) {
    const calls: string[] = [];
    const api = new ElasticMetalApi({ apiUrl, secretKey: SCW_KEY, projectId: PROJECT }, (operation) => calls.push(operation));
    const instance = new OrphanReclaimer({ clusterId: cluster, inventory: elasticMetalInventory(api), graceMs: 0, dryRun });
    instance.knownNodes = async () => elasticMetalKnownNodes(fleet, await nodeNames());
    return { instance, calls };
  }

  beforeEach(async function () {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-em-orphans-"));
    scaleway = buildFakeScaleway({
      secretKey: SCW_KEY,
      projectId: PROJECT,
      stateFile: join(directory, "scw.json"),
      actionMs: 20,
      installMs: 0,
    });
    apiUrl = await scaleway.app.listen({ port: 0, host: "127.0.0.1" });
  });

  afterEach(async function () {
    await scaleway.app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("deletes only the servers no stack declares and no Node holds, in every zone", async function () {
    await order("fr-par-2", `${cluster}-gpu-0`, tagsOf("gpu", "gpu-0")); // declared
    await order("fr-par-2", `${cluster}-gpu-2`, tagsOf("gpu", "gpu-2")); // scaled down in git, Node still there
    await order("fr-par-2", `${cluster}-gpu-3`, tagsOf("gpu", "gpu-3")); // leaked by a killed install
    await order("nl-ams-1", `${cluster}-old-0`, tagsOf("old", "old-0")); // a pool removed, in another zone
    await order("fr-par-2", "other-gpu-9", tagsOf("gpu", "gpu-9", "other")); // another cluster's
    await order("fr-par-2", "untagged", []); // not nodefleet's
    const { instance, calls } = reclaimer(async () => [`${cluster}-gpu-0`, `${cluster}-gpu-2`, "elsewhere-1"]);
    const decisions = await instance.sweep();
    assert.deepEqual(decisions.map((d) => `${d.server.name} ${d.action}`).sort(), [`${cluster}-gpu-3 deleted`, `${cluster}-old-0 deleted`]);
    assert.deepEqual(names(), [`${cluster}-gpu-0`, `${cluster}-gpu-2`, "other-gpu-9", "untagged"]);
    // One list per Elastic Metal zone, one delete per orphan.
    assert.equal(calls.filter((c) => c === "list_servers").length, 6);
    assert.equal(calls.filter((c) => c === "delete_server").length, 2);
  });

  it("reads every page of a zone", async function () {
    for (let i = 0; i < 101; i++) await order("fr-par-2", `${cluster}-leak-${i}`, tagsOf("leak", `leak-${i}`));
    await order("fr-par-2", `${cluster}-gpu-1`, tagsOf("gpu", "gpu-1"));
    const { instance } = reclaimer(async () => []);
    const decisions = await instance.sweep();
    assert.equal(decisions.filter((d) => d.action === "deleted").length, 101);
    assert.deepEqual(names(), [`${cluster}-gpu-1`]);
  });

  it("in dry run reports and deletes nothing; without Nodes to check it deletes nothing", async function () {
    await order("fr-par-2", `${cluster}-gpu-3`, tagsOf("gpu", "gpu-3"));
    const dry = reclaimer(async () => [], true).instance;
    assert.deepEqual(
      (await dry.sweep()).map((d) => d.action),
      ["dry-run"],
    );
    const blind = reclaimer(async () => {
      throw new Error("the stack names no kubeconfig");
    }).instance;
    await assert.rejects(blind.sweep(), /no kubeconfig/);
    assert.deepEqual(names(), [`${cluster}-gpu-3`]);
  });

  it("takes its access from the environment, and none without a secret key", function () {
    assert.equal(scalewayAccessFromEnv({}), undefined);
    assert.deepEqual(scalewayAccessFromEnv({ SCW_SECRET_KEY: SCW_KEY, SCW_DEFAULT_PROJECT_ID: PROJECT }), {
      apiUrl: "https://api.scaleway.com",
      secretKey: SCW_KEY,
      projectId: PROJECT,
    });
  });
});
