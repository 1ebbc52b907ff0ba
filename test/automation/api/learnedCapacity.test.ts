/**
 * Learned node capacity through the service (api/nodeCapacityWatch.ts) with the fake engine and a
 * fake Node list: `GET /instance-types` switches a type from `estimated` to `learned` once a Node of
 * one of its members is Ready, equal to what that Node reported; a Node reporting less lowers it,
 * one reporting more does not raise it; Nodes that are not the API's members teach nothing; later
 * creates are admitted with the learned values; and a restarted service still knows them. The
 * members are read from either home of the claims (SQLite, or the PostgreSQL several replicas share).
 */
import { strict as assert } from "node:assert";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { InstanceType } from "../../../automation/client/nodefleetClient";
import { serviceKubeconfig } from "../../../automation/api/clusterNodeList";
import { nodeReports } from "../../../automation/api/nodeCapacityWatch";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import { eventually, exampleConfig, tempDataDir, type TestApi } from "../../support/apiHarness";
import { storeBackends } from "../../support/storeBackends";

type ResourceList = InstanceType["capacity"];

interface FakeNode {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string };
  status: { capacity: ResourceList; allocatable: ResourceList; conditions: Array<{ type: string; status: string }> };
}

function mebibytes(quantity: string): number {
  const match = /^(\d+)Mi$/.exec(quantity);
  assert.ok(match, `a quantity in Mi: ${quantity}`);
  return Number(match[1]);
}

function withMemory(list: ResourceList, mib: number): ResourceList {
  return { ...list, memory: `${mib * 1024}Ki` };
}

function fakeNode(name: string, labels: Record<string, string>, capacity: ResourceList, allocatable: ResourceList, ready = true): FakeNode {
  return {
    metadata: { name, labels },
    spec: {},
    status: { capacity, allocatable, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

const memberLabels = (nodeId: string, type = "cpx31") => ({
  "nodefleet.io/cluster": "example",
  "nodefleet.io/pool": "hel1-burst",
  "nodefleet.io/node": nodeId,
  "node.kubernetes.io/instance-type": type,
});

/** A member's Node as its kubelet registers it: the ownership labels of its pool and its providerID (no nodefleet.io/node label). */
function registeredNode(nodeId: string, capacity: ResourceList, allocatable: ResourceList, ready = true): FakeNode {
  const { "nodefleet.io/node": _node, ...labels } = memberLabels(nodeId);
  return { ...fakeNode(`example-${nodeId}`, labels, capacity, allocatable, ready), spec: { providerID: `nodefleet:///example/${nodeId}` } };
}

/** capacity - overhead, in MiB of memory. */
function allocatableMemory(t: InstanceType): number {
  return mebibytes(t.capacity.memory) - mebibytes(t.overhead.memory);
}

for (const backend of storeBackends())
  describe(`learned node capacity through the API (${backend.name})`, function () {
    backend.hooks();
    let api: TestApi | undefined;
    let nodes: FakeNode[];
    let dataDir: string;

    const type = async (name: string) => (await api!.client.instanceTypes()).find((t) => t.name === name)!;

    beforeEach(async () => {
      nodes = [];
      dataDir = tempDataDir();
      api = await backend.startApi({
        engine: new FakeStackEngine(),
        dataDir,
        nodeCapacity: { listNodes: async () => ({ items: nodes }), intervalMs: 20 },
      });
    });
    afterEach(async () => api?.close());

    it("replaces the estimate with what the first Ready Node of a type reported, lowers it, and keeps it over a restart", async () => {
      const estimated = await type("cpx31");
      assert.equal(estimated.capacitySource, "estimated");
      const { node } = await api!.client.createNode(
        { uniqueID: "learn-1", pool: "hel1-burst", instanceType: "cpx31" },
        { waitSeconds: 10 },
      );
      assert.equal(node.status, "RUNNING");
      assert.deepEqual(node.capacity, estimated.capacity, "the first node is admitted with the estimate");

      // The kubelet reports 150 MiB less memory than estimated, 250 MiB less allocatable; Ki as kubelets write it.
      const capacityMiB = mebibytes(estimated.capacity.memory) - 150;
      const allocatableMiB = allocatableMemory(estimated) - 250;
      const reported = { capacity: withMemory(estimated.capacity, capacityMiB), allocatable: withMemory(node.allocatable, allocatableMiB) };
      // Not Ready yet: nothing learned.
      nodes.push(registeredNode(node.nodeID, reported.capacity, reported.allocatable, false));
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal((await type("cpx31")).capacitySource, "estimated", "a Node not Ready teaches nothing");

      nodes[0]!.status.conditions[0]!.status = "True";
      const learned = await eventually(async () => {
        const t = await type("cpx31");
        return t.capacitySource === "learned" ? t : undefined;
      });
      assert.equal(mebibytes(learned.capacity.memory), capacityMiB);
      assert.equal(allocatableMemory(learned), allocatableMiB, "capacity - overhead is the Node's allocatable");
      assert.equal(learned.cpu, estimated.cpu);
      assert.equal(learned.memoryMiB, estimated.memoryMiB, "the instance-memory figure stays nominal");
      assert.equal((await type("cpx21")).capacitySource, "estimated", "other types keep the estimate");

      // Nodes that are not the API's members, or lie about their type or pool, teach nothing, however small.
      const tiny = withMemory(estimated.capacity, 100);
      nodes.push(
        {
          ...fakeNode("static-1", { "nodefleet.io/cluster": "example", "nodefleet.io/pool": "static" }, tiny, tiny),
          spec: { providerID: "nodefleet:///example/static-1" },
        },
        { ...fakeNode("other-provider", memberLabels(node.nodeID), tiny, tiny), spec: { providerID: `nodefleet:///other/${node.nodeID}` } },
        fakeNode("forged", memberLabels("not-a-claim"), tiny, tiny),
        { ...fakeNode("label-only", memberLabels(node.nodeID), tiny, tiny), spec: { providerID: `nodefleet:///example/${node.nodeID}-x` } },
        fakeNode("wrong-type", memberLabels(node.nodeID, "cpx21"), tiny, tiny),
        fakeNode("wrong-pool", { ...memberLabels(node.nodeID), "nodefleet.io/pool": "other" }, tiny, tiny),
        fakeNode("other-cluster", { ...memberLabels(node.nodeID), "nodefleet.io/cluster": "other" }, tiny, tiny),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(allocatableMemory(await type("cpx31")), allocatableMiB, "foreign Nodes ignored");

      // A second member: reporting more changes nothing; reporting less lowers the offer.
      const second = (await api!.client.createNode({ uniqueID: "learn-2", pool: "hel1-burst", instanceType: "cpx31" }, { waitSeconds: 10 }))
        .node;
      assert.deepEqual(second.capacity, learned.capacity, "later creates are admitted with what was learned");
      assert.equal(mebibytes(second.allocatable.memory), allocatableMiB);
      nodes.push(
        fakeNode("worker-learn-2", memberLabels(second.nodeID), estimated.capacity, withMemory(node.allocatable, allocatableMiB + 500)),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(allocatableMemory(await type("cpx31")), allocatableMiB, "a Node with more never raises the offer");
      nodes[nodes.length - 1]!.status.allocatable = withMemory(node.allocatable, allocatableMiB - 64);
      await eventually(async () => (allocatableMemory(await type("cpx31")) === allocatableMiB - 64 ? true : undefined));

      await api!.close();
      api = await backend.startApi({ engine: new FakeStackEngine(), dataDir, nodeCapacity: false }, api);
      const afterRestart = await type("cpx31");
      assert.equal(afterRestart.capacitySource, "learned", "learned capacity is in the store");
      assert.equal(allocatableMemory(afterRestart), allocatableMiB - 64);
    });
  });

describe("reading the cluster's Nodes", () => {
  it("reads Nodes with the stack's kubeconfig, or the file KUBECONFIG names, and not at all without one", () => {
    const config = exampleConfig();
    const cluster = config["nodefleet:cluster"]!;
    assert.equal(serviceKubeconfig(config, {}), undefined, "the example stack has no kubeconfig");
    const inline = { ...config, "nodefleet:cluster": { value: { ...(cluster.value as object), kubeconfig: "inline: yes" }, secret: true } };
    assert.equal(serviceKubeconfig(inline, {}), "inline: yes");
    const file = join(tempDataDir(), "admin.kubeconfig");
    writeFileSync(file, "from: file\n");
    const fromEnvironment = {
      ...config,
      "nodefleet:cluster": { value: { ...(cluster.value as object), kubeconfigFromEnvironment: true } },
    };
    assert.equal(serviceKubeconfig(fromEnvironment, { KUBECONFIG: file }), "from: file\n");
    assert.equal(serviceKubeconfig(fromEnvironment, {}), undefined);
    assert.equal(serviceKubeconfig(fromEnvironment, { KUBECONFIG: `${file}:${file}` }), undefined, "a list is not one kubeconfig");
  });

  it("answers no reports for a list that is not a Node list", () => {
    for (const list of [undefined, null, {}, { items: "x" }, { items: [null, 1, { metadata: {} }] }])
      assert.deepEqual(
        nodeReports(list, "example", { claimOf: () => undefined, providerIdOf: (claim) => `nodefleet:///example/${claim.nodeId}` }),
        [],
      );
  });
});
