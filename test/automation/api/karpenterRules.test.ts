/**
 * The rules a Karpenter driver depends on (docs/design.md §5.5), over real HTTP on 127.0.0.1 (fake engine):
 * NodeClaim names as uniqueIDs, Gte/Lte and minValues, canonical replay, taint merging, the node
 * object's Karpenter fields, Reason-safe drift and the pool template hash that signals it, offerings at a pool limit, kubelet-accurate
 * capacity and one error code per meaning.
 */
import { strict as assert } from "node:assert";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import type { CreateNodeBody } from "../../../automation/client/nodefleetClient";
import { findServerType, shippedCatalog } from "../../../automation/catalog/serverTypes";
import { apiError, startTestApi, type TestApi } from "../../support/apiHarness";

/** Kubernetes condition Reason (metav1.Condition), as Karpenter validates IsDrifted's answer. */
const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const NODES = "/api/v1/clusters/example/nodes";
const json = { "content-type": "application/json" };
const pool = "hel1-burst";
type Requirements = NonNullable<CreateNodeBody["requirements"]>;

describe("scaling API rules a Karpenter driver depends on", function () {
  let api: TestApi;

  beforeEach(async () => {
    api = await startTestApi();
  });
  afterEach(async () => api.close());

  const createStatus = async (body: unknown) => {
    const response = await api.client.raw("POST", NODES, { body: JSON.stringify(body), headers: json });
    return { status: response.status, body: response.body as { error?: { code: string; message: string }; nodeID?: string } };
  };

  it("takes any NodeClaim name as uniqueID: a DNS subdomain with dots, up to 253 characters", async () => {
    const dotted = await api.client.createNode({ uniqueID: "team.default-x7k2q", pool });
    assert.equal(dotted.node.nodeID, nodeIdFor("team.default-x7k2q"));
    const longest = Array.from({ length: 4 }, () => "a".repeat(63))
      .join(".")
      .slice(0, 253);
    assert.equal(longest.length, 253);
    assert.equal((await createStatus({ uniqueID: longest, pool })).status, 201);
    for (const uniqueID of [`${longest}a`, "Upper.case", "a..b", ".a", "a.", "a_b", "-a"]) {
      const { status, body } = await createStatus({ uniqueID, pool });
      assert.equal(status, 400, uniqueID);
      assert.equal(body.error!.code, "ValidationError");
      assert.match(body.error!.message + JSON.stringify(body), /uniqueID/);
    }
  });

  it("honours Gte and Lte on numeric labels, and refuses them without exactly one integer", async () => {
    const cpu = "nodefleet.io/instance-cpu";
    // cpx21: 3 cores, cpx31: 4, cpx41: 8, ccx23: 4 (dedicated, dearer).
    const gte = await api.client.createNode({ uniqueID: "gte", pool, requirements: [{ key: cpu, operator: "Gte", values: ["4"] }] });
    assert.equal(gte.node.instanceType, "cpx31");
    const lte = await api.client.createNode({ uniqueID: "lte", pool, requirements: [{ key: cpu, operator: "Lte", values: ["3"] }] });
    assert.equal(lte.node.instanceType, "cpx21");
    const none = await apiError(
      api.client.createNode({ uniqueID: "gte-none", pool, requirements: [{ key: cpu, operator: "Gte", values: ["9"] }] }),
    );
    assert.equal(none.code, "NoCompatibleInstanceType");
    for (const values of [[], ["4", "5"], ["four"]]) {
      const { status, body } = await createStatus({ uniqueID: "bad-gte", pool, requirements: [{ key: cpu, operator: "Lte", values }] });
      assert.equal(status, 400, JSON.stringify(values));
      assert.match(JSON.stringify(body), /requirements\.0\.values/);
    }
  });

  it("honours minValues: fewer fitting values than asked for is 422 NoCompatibleInstanceType", async () => {
    const type = "node.kubernetes.io/instance-type";
    const two: Requirements = [{ key: type, operator: "In", values: ["cpx31", "cpx41"], minValues: 2 }];
    assert.equal((await api.client.createNode({ uniqueID: "min-two", pool, requirements: two })).node.instanceType, "cpx31");
    const three: Requirements = [{ key: type, operator: "In", values: ["cpx31", "cpx41", "cax11"], minValues: 3 }];
    const error = await apiError(api.client.createNode({ uniqueID: "min-three", pool, requirements: three }));
    assert.equal(error.status, 422);
    assert.equal(error.code, "NoCompatibleInstanceType");
    assert.match(error.message, /minValues/);
    // Another requirement narrowing the types counts too.
    const narrowed: Requirements = [
      { key: type, operator: "Exists", minValues: 2 },
      { key: "nodefleet.io/instance-cpu", operator: "Gt", values: ["4"] },
    ];
    assert.equal(
      (await apiError(api.client.createNode({ uniqueID: "min-narrowed", pool, requirements: narrowed }))).code,
      "NoCompatibleInstanceType",
    );
    const { status } = await createStatus({ uniqueID: "min-zero", pool, requirements: [{ key: type, operator: "Exists", minValues: 0 }] });
    assert.equal(status, 400);
  });

  it("recognises a replay on the canonical body: reordered requirements and values, taints in another order, labels added later", async () => {
    const first = await api.client.createNode({
      uniqueID: "replayed",
      pool,
      requirements: [
        { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cpx41", "cpx31"] },
        { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
      ],
      labels: { "karpenter.sh/nodepool": "default" },
      taints: [
        { key: "a", effect: "NoSchedule" },
        { key: "b", value: "x", effect: "NoExecute" },
      ],
    });
    const again = await api.client.createNode({
      uniqueID: "replayed",
      pool,
      requirements: [
        { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
        { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cpx31", "cpx41"] },
      ],
      labels: { "karpenter.sh/nodepool": "default", "karpenter.k8s.nodefleet/nodefleetnodeclass": "default" },
      taints: [
        { key: "b", value: "x", effect: "NoExecute" },
        { key: "a", effect: "NoSchedule" },
      ],
    });
    assert.equal(again.created, false);
    assert.equal(again.node.nodeID, first.node.nodeID);
    // A changed label value, a dropped label or another requirement is still a different request.
    for (const body of [
      { uniqueID: "replayed", pool, labels: { "karpenter.sh/nodepool": "other" } },
      { uniqueID: "replayed", pool, requirements: [{ key: "kubernetes.io/arch", operator: "In" as const, values: ["amd64"] }] },
    ]) {
      assert.equal((await apiError(api.client.createNode(body))).code, "Conflict");
    }
    const dropped = await apiError(
      api.client.createNode({
        uniqueID: "replayed",
        pool,
        requirements: [
          { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
          { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cpx31", "cpx41"] },
        ],
        taints: [
          { key: "a", effect: "NoSchedule" },
          { key: "b", value: "x", effect: "NoExecute" },
        ],
      }),
    );
    assert.equal(dropped.code, "Conflict", "a label of the first create is missing");
  });

  it("merges the pool's and the request's taints by (key, effect), the request's value winning, and refuses a repeated pair", async () => {
    // The example pool taints workload=burst:NoSchedule.
    const { node } = await api.client.createNode({
      uniqueID: "taints",
      pool,
      taints: [
        { key: "workload", value: "ci", effect: "NoSchedule" },
        { key: "workload", effect: "NoExecute" },
      ],
    });
    assert.deepEqual(
      node.taints.map((t) => `${t.key}=${t.value ?? ""}:${t.effect}`),
      ["workload=ci:NoSchedule", "workload=:NoExecute"],
    );
    const { status, body } = await createStatus({
      uniqueID: "taints-dup",
      pool,
      taints: [
        { key: "dedicated", value: "a", effect: "NoSchedule" },
        { key: "dedicated", value: "b", effect: "NoSchedule" },
      ],
    });
    assert.equal(status, 400);
    assert.equal(body.error!.code, "ValidationError");
    assert.match(JSON.stringify(body), /taints\.1.*dedicated.*NoSchedule/);
  });

  it("reports imageID and the arch, os and region labels next to instance type, zone and capacity type", async () => {
    const { node } = await api.client.createNode({ uniqueID: "labels", pool });
    assert.equal(node.imageID, "ubuntu-24.04");
    assert.equal(node.labels["kubernetes.io/arch"], "amd64");
    assert.equal(node.labels["kubernetes.io/os"], "linux");
    assert.equal(node.labels["topology.kubernetes.io/region"], "eu-central");
    assert.equal(node.labels["topology.kubernetes.io/zone"], "hel1");
    assert.equal(node.labels["node.kubernetes.io/instance-type"], "cpx21");
    assert.equal(node.labels["karpenter.sh/capacity-type"], "on-demand");
    assert.equal(node.failureCode, undefined);
  });

  it("reports failureCode beside failureReason on a FAILED node", async () => {
    const { node } = await api.client.createNode({ uniqueID: "fails", pool });
    api.app.nodefleet.store.update("example", node.nodeID, {
      status: "FAILED",
      failureCode: "CreateFailed",
      failureReason: "server create failed",
    });
    const failed = await api.client.getNode(node.nodeID);
    assert.equal(failed.failureCode, "CreateFailed");
    assert.equal(failed.failureReason, "server create failed");
  });

  it("answers drift as a condition Reason with the explanation in driftDetails", async () => {
    const { node } = await api.client.createNode({ uniqueID: "drifts", pool });
    const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    const burst = pools.find((p) => p.name === pool)!;
    burst.image = "ubuntu-22.04";
    burst.serverTypes = ["cpx31", "cpx41"];
    const drifted = await api.client.getNode(node.nodeID);
    assert.equal(drifted.drifted, true);
    assert.match(drifted.driftReason!, CONDITION_REASON);
    assert.equal(drifted.driftReason, "ServerTypeDrift,ImageDrift");
    assert.match(drifted.driftDetails!, /image: ubuntu-24\.04 -> ubuntu-22\.04/);
    assert.match(drifted.driftDetails!, /serverTypes: cpx21 is no longer allowed/);
    api.config["nodefleet:pools"] = { value: pools.filter((p) => p.name !== pool) };
    const orphaned = (await api.client.listNodes())[0]!;
    assert.equal(orphaned.driftReason, "PoolRemoved");
    assert.match(orphaned.driftReason!, CONDITION_REASON);
  });

  it("describes each pool's template by a hash that changes with every change drifting its nodes, and only with template changes", async () => {
    const { node } = await api.client.createNode({ uniqueID: "watched", pool });
    const hashOf = async () => (await api.client.getCluster()).pools.find((p) => p.name === pool)!.templateHash;
    const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    const burst = pools.find((p) => p.name === pool)!;
    const first = await hashOf();
    assert.match(first, /^[0-9a-f]{16}$/);
    burst.limits = { ...(burst.limits as object), maxNodes: 7 };
    assert.equal(await hashOf(), first, "a limit is not part of the template");
    assert.equal((await api.client.getNode(node.nodeID)).drifted, false);
    burst.labels = { ...(burst.labels as object), "example.com/tier": "gold" };
    const second = await hashOf();
    assert.notEqual(second, first);
    assert.equal((await api.client.getNode(node.nodeID)).driftReason, "LabelsDrift");
    burst.image = "ubuntu-22.04";
    assert.notEqual(await hashOf(), second);
    assert.equal((await api.client.getNode(node.nodeID)).driftReason, "ImageDrift,LabelsDrift");
  });

  it("marks offerings unavailable while the pool is at a limit, so Karpenter does not loop on InsufficientCapacity", async () => {
    const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
    const burst = pools.find((p) => p.name === pool)!;
    burst.limits = { maxNodes: 2, cpu: 8 };
    await api.client.createNode({ uniqueID: "limit-1", pool, instanceType: "cpx31" }); // 4 cores of 8
    const available = async () => Object.fromEntries((await api.client.instanceTypes()).map((t) => [t.name, t.offerings[0]!.available]));
    assert.deepEqual(await available(), { cpx21: true, cpx31: true, cpx41: false, ccx23: true }, "cpx41's 8 cores exceed the 4 left");
    await api.client.createNode({ uniqueID: "limit-2", pool, instanceType: "cpx21" });
    assert.deepEqual(await available(), { cpx21: false, cpx31: false, cpx41: false, ccx23: false }, "maxNodes reached");
  });

  it("reports the capacity the kubelet will: Hetzner GiB of memory less the documented VM overhead, decimal GB of disk", async () => {
    const types = await api.client.instanceTypes();
    const cpx21 = types.find((t) => t.name === "cpx21")!;
    const catalog = findServerType(shippedCatalog(), "cpx21")!;
    assert.equal(catalog.memoryGiB, 4);
    assert.equal(catalog.diskGB, 80);
    // 4 GiB = 4096 MiB, less 7.5 % held by firmware and kernel: floor(3788.8).
    assert.equal(cpx21.capacity.memory, "3788Mi");
    assert.equal(cpx21.memoryMiB, 3788);
    // 80 GB = 80e9 bytes = 76293.9 MiB.
    assert.equal(cpx21.capacity["ephemeral-storage"], "76293Mi");
    const { node } = await api.client.createNode({ uniqueID: "capacity", pool });
    assert.deepEqual(node.capacity, cpx21.capacity);
  });

  it("lists instance types with os and region", async () => {
    for (const t of await api.client.instanceTypes()) {
      assert.equal(t.os, "linux");
      assert.equal(t.region, "eu-central");
    }
  });

  it("gives each meaning its own error code: an unknown route is not a missing node, malformed JSON is not a validation error", async () => {
    const route = await api.client.raw("GET", "/api/v1/nothing-here");
    assert.equal(route.status, 404);
    assert.equal((route.body as { error: { code: string } }).error.code, "RouteNotFound");
    const node = await api.client.raw("GET", `${NODES}/k000000000000`);
    assert.equal((node.body as { error: { code: string } }).error.code, "NodeNotFound");
    const malformed = await api.client.raw("POST", NODES, { body: "{", headers: json });
    assert.equal(malformed.status, 400);
    assert.equal((malformed.body as { error: { code: string } }).error.code, "MalformedJson");
  });
});
