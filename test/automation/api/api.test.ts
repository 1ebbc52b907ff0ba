/**
 * Every route of the scaling API over real HTTP on 127.0.0.1: success, each documented error,
 * authentication, and hostile input (malformed, oversized, random bodies never yield a 5xx).
 */
import { strict as assert } from "node:assert";
import * as net from "node:net";
import fc from "fast-check";
import { parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { GENERATION_SUFFIX_LENGTH, generationServerName } from "../../../components/fleet/generationSuffix";
import { hostnameFor } from "../../../components/fleet/naming";
import { nodeOverhead } from "../../../components/bootstrap/kubeletReservations";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { configValues } from "../../../automation/stackConfigFile";
import { FakeStackEngine } from "../../support/fakeStackEngine";
import {
  OTHER_CLUSTER_TOKEN,
  ROTATED_TOKEN,
  TOKEN,
  apiError,
  eventually,
  exampleConfig,
  startTestApi,
  type TestApi,
} from "../../support/apiHarness";

function assertErrorShape(body: unknown, code?: string): void {
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  assert.ok(error, `expected an error body, got ${JSON.stringify(body)}`);
  assert.equal(typeof error.code, "string");
  assert.equal(typeof error.message, "string");
  if (code) assert.equal(error.code, code);
}

const NODES = "/api/v1/clusters/example/nodes";
const json = { "content-type": "application/json" };

describe("scaling API routes", function () {
  let api: TestApi;
  let engine: FakeStackEngine;

  beforeEach(async () => {
    engine = new FakeStackEngine();
    api = await startTestApi({ engine });
  });
  afterEach(async () => api.close());

  describe("GET /clusters/{clusterId}", () => {
    it("describes the cluster and its autoscaled pools with limits and usage", async () => {
      await api.client.createNode({ uniqueID: "usage-1", pool: "hel1-burst", instanceType: "cpx31" });
      const cluster = await api.client.getCluster();
      assert.equal(cluster.id, "example");
      assert.equal(cluster.kind, "k0s");
      assert.equal(cluster.providerIdScheme, "nodefleet");
      assert.deepEqual(
        cluster.pools.map((p) => p.name),
        ["hel1-burst"],
      );
      const pool = cluster.pools[0]!;
      assert.equal(pool.limits.maxNodes, 90);
      // cpx31: 8 GiB, of which the kubelet sees 7577 MiB (less the VM overhead); limits count what the kubelet reports.
      assert.deepEqual(pool.usage, { nodes: 1, cpu: 4, memoryGiB: 7577 / 1024 });
    });

    it("shows each pool's template labels and taints as the stack declares them now", async () => {
      const burstPool = async () => (await api.client.getCluster()).pools.find((p) => p.name === "hel1-burst")!;
      const declared = await burstPool();
      assert.deepEqual(declared.labels, { "example.com/burst": "true" });
      assert.deepEqual(declared.taints, [{ key: "workload", value: "batch", effect: "NoSchedule" }]);
      // A pool edited in the stack shows its new template; a taint without a value has no value.
      const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
      const burst = pools.find((p) => p.name === "hel1-burst")!;
      burst.labels = { "example.com/tier": "gold" };
      burst.taints = [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "example.com/dedicated", effect: "NoExecute" },
      ];
      const edited = await burstPool();
      assert.deepEqual(edited.labels, { "example.com/tier": "gold" });
      assert.deepEqual(edited.taints, [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "example.com/dedicated", effect: "NoExecute" },
      ]);
      assert.equal("value" in edited.taints[1]!, false);
      burst.labels = {};
      burst.taints = [];
      const bare = await burstPool();
      assert.deepEqual([bare.labels, bare.taints], [{}, []]);
    });
  });

  describe("GET /clusters/{clusterId}/instance-types", () => {
    it("lists every server type of the pool in order with capacity, overhead from nodeOverhead and priced offerings", async () => {
      const types = await api.client.instanceTypes();
      assert.deepEqual(
        types.map((t) => t.name),
        ["cpx21", "cpx31", "cpx41", "ccx23"],
      );
      const kubelet = parseFleetSpec(configValues(api.config)).cluster.kubelet;
      const overhead = nodeOverhead(kubelet);
      for (const t of types) {
        assert.equal(t.pool, "hel1-burst");
        assert.equal(t.provider, "hcloud");
        assert.equal(t.capacity.pods, String(kubelet.maxPods));
        assert.equal(t.capacity.cpu, String(t.cpu));
        assert.equal(t.capacity.memory, `${t.memoryMiB}Mi`);
        assert.match(t.capacity["ephemeral-storage"], /^\d+Mi$/);
        assert.equal(t.overhead.cpu, `${overhead.cpuMillis}m`);
        assert.equal(t.overhead.memory, `${overhead.memoryMiB}Mi`);
        assert.equal(t.offerings.length, 1);
        assert.equal(t.offerings[0]!.zone, "hel1");
        assert.equal(t.offerings[0]!.capacityType, "on-demand");
        assert.equal(typeof t.offerings[0]!.price, "number");
        assert.ok(t.offerings[0]!.price > 0);
        assert.equal(t.offerings[0]!.available, true);
      }
    });

    it("keeps unavailable offerings in the list, marked unavailable", async () => {
      api.app.nodefleet.availability.markUnavailable("cpx31", "hel1", "sold out");
      const types = await api.client.instanceTypes();
      assert.equal(types.find((t) => t.name === "cpx31")!.offerings[0]!.available, false);
      assert.equal(types.find((t) => t.name === "cpx21")!.offerings[0]!.available, true);
    });
  });

  describe("POST /clusters/{clusterId}/nodes", () => {
    it("answers 201 PENDING before any server exists, with the providerID the node registers with", async () => {
      const { created, node } = await api.client.createNode({ uniqueID: "nodeclaim-a", pool: "hel1-burst" });
      assert.equal(created, true);
      assert.equal(node.status, "PENDING");
      assert.equal(node.instanceID, null);
      assert.equal(node.nodeID, nodeIdFor("nodeclaim-a"));
      assert.equal(node.providerID, `nodefleet:///example/${node.nodeID}`);
      assert.match(`example-${node.nodeID}`, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
      assert.equal(node.instanceType, "cpx21", "the cheapest available fitting type");
      assert.equal(node.zone, "hel1");
      assert.equal(node.capacity.pods, "110");
      assert.equal(node.drifted, false);
      assert.equal(engine.servers.size, 0, "answered before the engine ran");
    });

    it("returns the same node with 200 for the same uniqueID and body, 409 Conflict for another body", async () => {
      const first = await api.client.createNode({ uniqueID: "dup", pool: "hel1-burst" });
      const again = await api.client.createNode({ uniqueID: "dup", pool: "hel1-burst" });
      assert.equal(again.created, false);
      assert.equal(again.node.nodeID, first.node.nodeID);
      const conflict = await apiError(api.client.createNode({ uniqueID: "dup", pool: "hel1-burst", instanceType: "cpx41" }));
      assert.equal(conflict.status, 409);
      assert.equal(conflict.code, "Conflict");
    });

    it("honours instanceType, requirements and zone, and refuses what no type satisfies with 422", async () => {
      const named = await api.client.createNode({ uniqueID: "named", pool: "hel1-burst", instanceType: "ccx23" });
      assert.equal(named.node.instanceType, "ccx23");
      const narrowed = await api.client.createNode({
        uniqueID: "narrowed",
        pool: "hel1-burst",
        zone: "hel1",
        requirements: [
          { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cpx41", "cpx31"] },
          { key: "example.com/team", operator: "In", values: ["a"] },
        ],
      });
      assert.equal(narrowed.node.instanceType, "cpx31", "the cheaper of the two allowed");
      for (const body of [
        { uniqueID: "arm", pool: "hel1-burst", requirements: [{ key: "kubernetes.io/arch", operator: "In" as const, values: ["arm64"] }] },
        { uniqueID: "zone", pool: "hel1-burst", zone: "fsn1" },
        { uniqueID: "type", pool: "hel1-burst", instanceType: "cax11" },
        {
          uniqueID: "cpu",
          pool: "hel1-burst",
          requirements: [{ key: "nodefleet.io/instance-cpu", operator: "Gt" as const, values: ["64"] }],
        },
      ]) {
        const error = await apiError(api.client.createNode(body));
        assert.equal(error.status, 422, body.uniqueID);
        assert.equal(error.code, "NoCompatibleInstanceType");
      }
    });

    it("honours every operator on the keys Karpenter uses: instance type, zone, arch, capacity type", async () => {
      const type = "node.kubernetes.io/instance-type";
      const zone = "topology.kubernetes.io/zone";
      const arch = "kubernetes.io/arch";
      const capacityType = "karpenter.sh/capacity-type";
      type Req = { key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt"; values?: string[] };
      const cases: Array<[string, Req[], string | 422]> = [
        ["in-type", [{ key: type, operator: "In", values: ["cpx41"] }], "cpx41"],
        ["notin-type", [{ key: type, operator: "NotIn", values: ["cpx21"] }], "cpx31"],
        ["exists-type", [{ key: type, operator: "Exists" }], "cpx21"],
        ["dne-type", [{ key: type, operator: "DoesNotExist" }], 422],
        ["in-zone", [{ key: zone, operator: "In", values: ["fsn1", "hel1"] }], "cpx21"],
        ["notin-zone", [{ key: zone, operator: "NotIn", values: ["hel1"] }], 422],
        ["in-arch", [{ key: arch, operator: "In", values: ["amd64"] }], "cpx21"],
        ["notin-arch", [{ key: arch, operator: "NotIn", values: ["amd64"] }], 422],
        ["dne-arch", [{ key: arch, operator: "DoesNotExist" }], 422],
        ["in-ondemand", [{ key: capacityType, operator: "In", values: ["on-demand"] }], "cpx21"],
        ["in-spot", [{ key: capacityType, operator: "In", values: ["spot"] }], 422],
        ["notin-ondemand", [{ key: capacityType, operator: "NotIn", values: ["on-demand"] }], 422],
        ["gt-cpu", [{ key: "nodefleet.io/instance-cpu", operator: "Gt", values: ["3"] }], "cpx31"],
        ["lt-cpu", [{ key: "nodefleet.io/instance-cpu", operator: "Lt", values: ["3"] }], 422],
        ["custom-dne", [{ key: "example.com/team", operator: "DoesNotExist" }], "cpx21"],
      ];
      for (const [uniqueID, requirements, expected] of cases) {
        const request = api.client.createNode({ uniqueID, pool: "hel1-burst", requirements });
        if (expected === 422) assert.equal((await apiError(request)).code, "NoCompatibleInstanceType", uniqueID);
        else assert.equal((await request).node.instanceType, expected, uniqueID);
      }
    });

    it("refuses requirements the Kubernetes API would refuse with 400: values that do not fit the operator", async () => {
      for (const requirement of [
        { key: "kubernetes.io/arch", operator: "In" },
        { key: "kubernetes.io/arch", operator: "NotIn", values: [] },
        { key: "kubernetes.io/arch", operator: "Exists", values: ["amd64"] },
        { key: "kubernetes.io/arch", operator: "DoesNotExist", values: ["amd64"] },
        { key: "nodefleet.io/instance-cpu", operator: "Gt", values: ["four"] },
        { key: "nodefleet.io/instance-cpu", operator: "Lt", values: ["4", "8"] },
      ]) {
        const response = await api.client.raw("POST", NODES, {
          body: JSON.stringify({ uniqueID: "bad-requirement", pool: "hel1-burst", requirements: [requirement] }),
          headers: json,
        });
        assert.equal(response.status, 400, JSON.stringify(requirement));
        assertErrorShape(response.body, "ValidationError");
        assert.match(JSON.stringify(response.body), /requirements\.0\.values/);
      }
    });

    it("refuses a requirement whose key is not a label key with 400, naming the field and the rule", async () => {
      for (const key of ["", "not a key", "-leading.dash/x", `${"a".repeat(254)}/name`, `example.com/${"n".repeat(64)}`]) {
        const response = await api.client.raw("POST", NODES, {
          body: JSON.stringify({ uniqueID: "bad-requirement-key", pool: "hel1-burst", requirements: [{ key, operator: "Exists" }] }),
          headers: json,
        });
        assert.equal(response.status, 400, JSON.stringify(key));
        assertErrorShape(response.body, "ValidationError");
        assert.match(JSON.stringify(response.body), /requirements\.0\.key/);
        assert.match(JSON.stringify(response.body), /label key/);
      }
      // Well-known keys, with and without a prefix, still pass validation.
      for (const key of ["kubernetes.io/arch", "nodefleet.io/instance-cpu", "karpenter.sh/capacity-type", "zone"]) {
        const response = await api.client.raw("POST", NODES, {
          body: JSON.stringify({
            uniqueID: `good-key-${key.replace(/[^a-z0-9]/g, "-")}`,
            pool: "hel1-burst",
            requirements: [{ key, operator: "Exists" }],
          }),
          headers: json,
        });
        assert.notEqual(response.status, 400, `${key}: ${JSON.stringify(response.body)}`);
      }
    });

    it("answers 404 PoolNotFound for an unknown or static pool, naming a static pool's mode and listing the autoscaled pools", async () => {
      for (const pool of ["nope", "hel1-general"]) {
        const error = await apiError(api.client.createNode({ uniqueID: `p-${pool}`, pool }));
        assert.equal(error.status, 404);
        assert.equal(error.code, "PoolNotFound");
        assert.match(error.message, /the autoscaled pools are: hel1-burst$/);
        assert.deepEqual((error.details as { pools: string[] }).pools, ["hel1-burst"]);
      }
      const general = await apiError(api.client.createNode({ uniqueID: "p-static", pool: "hel1-general" }));
      assert.match(general.message, /pool hel1-general of cluster example is a static pool \(provider hcloud, nodefleet:pools\[0\]\)/);
      assert.deepEqual(general.details, { pool: "hel1-general", mode: "static", provider: "hcloud", pools: ["hel1-burst"] });
      const typo = await apiError(api.client.createNode({ uniqueID: "p-typo", pool: "hel1-brust" }));
      assert.match(typo.message, /cluster example has no pool hel1-brust \(did you mean hel1-burst\?\)/);
      assert.equal(api.app.nodefleet.store.byUniqueId("example", "p-static"), undefined, "nothing was admitted");
    });

    it("gives each member of a pool its own placement slot for life, reusing slots of removed members", async () => {
      // No run may pick the claims up here, so the deleted one is gone at once and frees its slot.
      await api.close();
      api = await startTestApi({ engine, batch: { idleMs: 60_000, maxMs: 60_000 } });
      const ids = [];
      for (const uniqueID of ["slot-a", "slot-b", "slot-c"])
        ids.push((await api.client.createNode({ uniqueID, pool: "hel1-burst" })).node.nodeID);
      const slot = (id: string) => api.app.nodefleet.store.get("example", id)!.snapshot.placementSlot;
      assert.deepEqual(ids.map(slot), [0, 1, 2]);
      await api.client.deleteNode(ids[1]!);
      const next = await api.client.createNode({ uniqueID: "slot-d", pool: "hel1-burst" });
      assert.equal(slot(next.node.nodeID), 1);
    });

    it("hands a create's labels to the kubelet and reports them on the node; labels the kubelet would refuse are refused (reservedLabels.test.ts)", async () => {
      const labels = { "karpenter.sh/nodepool": "default", "example.com/team": "x", "node.kubernetes.io/lifecycle": "spot" };
      const { node } = await api.client.createNode({
        uniqueID: "labels",
        pool: "hel1-burst",
        labels,
        taints: [{ key: "dedicated", value: "ci", effect: "NoSchedule" }],
      });
      assert.equal(node.labels["example.com/team"], "x");
      assert.equal(node.labels["karpenter.sh/nodepool"], "default");
      assert.deepEqual(
        node.taints.map((t) => t.key),
        ["workload", "dedicated"],
      );
      const claim = api.app.nodefleet.store.get("example", node.nodeID)!;
      assert.deepEqual(claim.snapshot.kubeletLabels, labels);
      const refused = await apiError(
        api.client.createNode({ uniqueID: "labels-refused", pool: "hel1-burst", labels: { ...labels, "kubernetes.io/team": "x" } }),
      );
      assert.equal(refused.status, 400);
      assert.equal(refused.code, "ValidationError");
      assert.match(refused.message, /label kubernetes\.io\/team is reserved/);
    });

    it("enforces maxNodes, cpu and memory limits at admission, counting nodes not yet running", async () => {
      const pools = api.config["nodefleet:pools"]!.value as Array<Record<string, unknown>>;
      pools.find((p) => p.name === "hel1-burst")!.limits = { maxNodes: 2, cpu: 7 };
      await api.client.createNode({ uniqueID: "l1", pool: "hel1-burst" }); // cpx21: 3 cores
      const cpu = await apiError(api.client.createNode({ uniqueID: "l2", pool: "hel1-burst", instanceType: "cpx41" }));
      assert.equal(cpu.status, 409);
      assert.equal(cpu.code, "InsufficientCapacity");
      assert.equal((cpu.details as { limit: string }).limit, "cpu");
      await api.client.createNode({ uniqueID: "l3", pool: "hel1-burst" });
      const max = await apiError(api.client.createNode({ uniqueID: "l4", pool: "hel1-burst" }));
      assert.equal(max.code, "InsufficientCapacity");
      assert.equal((max.details as { limit: string }).limit, "maxNodes");
    });

    it("answers 409 InsufficientCapacity when every fitting offering is unavailable", async () => {
      api.app.nodefleet.availability.markUnavailable("cpx21", "hel1", "sold out");
      const { node } = await api.client.createNode({ uniqueID: "steered", pool: "hel1-burst" });
      assert.equal(node.instanceType, "cpx31", "skips the sold-out cheapest type");
      const error = await apiError(api.client.createNode({ uniqueID: "only-cpx21", pool: "hel1-burst", instanceType: "cpx21" }));
      assert.equal(error.status, 409);
      assert.equal(error.code, "InsufficientCapacity");
    });

    it("rejects invalid bodies with 400 ValidationError naming the fields", async () => {
      for (const body of [
        { uniqueID: "Upper", pool: "hel1-burst" },
        { uniqueID: "a".repeat(254), pool: "hel1-burst" },
        { uniqueID: "ok", pool: "hel1-burst", unknownField: 1 },
        { uniqueID: "ok", pool: "hel1-burst", taints: [{ key: "k", effect: "Sometimes" }] },
        { uniqueID: "ok", pool: "hel1-burst", requirements: [{ key: "k", operator: "Like" }] },
        { pool: "hel1-burst" },
        [],
        "text",
      ]) {
        const response = await api.client.raw("POST", NODES, { body: JSON.stringify(body), headers: json });
        assert.equal(response.status, 400, JSON.stringify(body));
        assertErrorShape(response.body, "ValidationError");
      }
    });

    it("waits with waitSeconds until RUNNING", async () => {
      const { created, node } = await api.client.createNode({ uniqueID: "waited", pool: "hel1-burst" }, { waitSeconds: 30 });
      assert.equal(created, true);
      assert.equal(node.status, "RUNNING");
      assert.ok(node.instanceID);
      assert.ok(node.ipv4);
    });

    it("maps a sold-out failure under waitSeconds to 409 InsufficientCapacity and marks the offering unavailable", async () => {
      engine.outOfStock.add("cpx21");
      const error = await apiError(api.client.createNode({ uniqueID: "sold-out", pool: "hel1-burst" }, { waitSeconds: 30 }));
      assert.equal(error.status, 409);
      assert.equal(error.code, "InsufficientCapacity");
      const types = await api.client.instanceTypes();
      assert.equal(types.find((t) => t.name === "cpx21")!.offerings[0]!.available, false);
      const failed = await api.client.getNode(nodeIdFor("sold-out"));
      assert.equal(failed.status, "FAILED");
      assert.match(failed.failureReason ?? "", /resource_unavailable/);
      const next = await api.client.createNode({ uniqueID: "after-sold-out", pool: "hel1-burst" });
      assert.equal(next.node.instanceType, "cpx31");
    });

    it("bounds waitSeconds: answers with the current status when the run takes longer, and refuses more than 120", async () => {
      engine.delayMs = 3000;
      const { node } = await api.client.createNode({ uniqueID: "slow", pool: "hel1-burst" }, { waitSeconds: 1 });
      assert.ok(node.status === "PENDING" || node.status === "PROVISIONING", node.status);
      const response = await api.client.raw("POST", `${NODES}?waitSeconds=121`, {
        body: JSON.stringify({ uniqueID: "too-long", pool: "hel1-burst" }),
        headers: json,
      });
      assert.equal(response.status, 400);
      assertErrorShape(response.body, "ValidationError");
    });
  });

  describe("GET, LIST and DELETE nodes", () => {
    it("gets, lists (with pool filter), deletes (repeatably) and then answers 404 NodeNotFound", async () => {
      const { node } = await api.client.createNode({ uniqueID: "lifecycle", pool: "hel1-burst" });
      const running = await eventually(async () => {
        const n = await api.client.getNode(node.nodeID);
        return n.status === "RUNNING" ? n : undefined;
      });
      assert.equal(running.instanceID, engine.servers.get(node.nodeID)!.serverId);
      assert.deepEqual(
        (await api.client.listNodes()).map((n) => n.nodeID),
        [node.nodeID],
      );
      assert.deepEqual(
        (await api.client.listNodes("hel1-burst")).map((n) => n.nodeID),
        [node.nodeID],
      );
      assert.deepEqual(await api.client.listNodes("other"), []);
      assert.deepEqual(await api.client.deleteNode(node.nodeID), { nodeID: node.nodeID, status: "TERMINATING" });
      assert.deepEqual(await api.client.deleteNode(node.nodeID), { nodeID: node.nodeID, status: "TERMINATING" });
      const gone = await eventually(async () => {
        const error = await apiError(api.client.getNode(node.nodeID));
        return error.status === 404 ? error : undefined;
      });
      assert.equal(gone.code, "NodeNotFound");
      assert.equal((await apiError(api.client.deleteNode(node.nodeID))).code, "NodeNotFound");
      assert.deepEqual(await api.client.listNodes(), []);
      assert.equal(engine.servers.size, 0);
      const replay = await apiError(api.client.createNode({ uniqueID: "lifecycle", pool: "hel1-burst" }));
      assert.equal(replay.code, "Conflict", "a deleted NodeClaim's name is not reused");
    });

    it("answers 404 NodeNotFound for an unknown node and 400 for an unknown query parameter", async () => {
      assert.equal((await apiError(api.client.getNode("k000000000000"))).code, "NodeNotFound");
      const response = await api.client.raw("GET", `${NODES}?colour=blue`);
      assert.equal(response.status, 400);
      assertErrorShape(response.body, "ValidationError");
    });
  });

  describe("GET /clusters/{clusterId}/operations", () => {
    it("records every engine run with kind, result, change summary and nodes", async () => {
      const { node } = await api.client.createNode({ uniqueID: "op", pool: "hel1-burst" }, { waitSeconds: 30 });
      const operations = await api.client.operations();
      // Newest first: the up, and before it the preview the guard ran.
      assert.deepEqual(
        operations.map((o) => o.kind),
        ["up", "preview"],
      );
      assert.ok(operations[1]!.id < operations[0]!.id);
      for (const op of operations) {
        assert.equal(op.result, "succeeded");
        assert.deepEqual(op.nodes, [node.nodeID]);
        assert.equal(op.summary!.create, 1);
        assert.ok(op.finishedAt && op.finishedAt >= op.startedAt);
      }
      const metrics = String((await api.client.raw("GET", "/metrics")).body);
      assert.match(metrics, /nodefleet_engine_runs_total\{cluster="example",kind="preview",result="succeeded"\} 1/);
      assert.match(metrics, /nodefleet_engine_runs_total\{cluster="example",kind="up",result="succeeded"\} 1/);
      assert.match(metrics, /nodefleet_engine_run_duration_seconds_count\{cluster="example",kind="up"\} 1/);
      assert.match(metrics, /nodefleet_nodes\{cluster="example",status="RUNNING"\} 1/);
    });
  });

  describe("authentication", () => {
    it("answers 401 without a token, with an unknown token or a non-bearer scheme", async () => {
      for (const headers of [
        {},
        { authorization: "Bearer wrong-token-0123456789" },
        { authorization: `Basic ${TOKEN}` },
        { authorization: "Bearer" },
      ]) {
        const response = await api.client.raw("GET", "/api/v1/clusters/example", { headers: { authorization: "", ...headers } });
        assert.equal(response.status, 401, JSON.stringify(headers));
        assertErrorShape(response.body, "Unauthorized");
      }
    });

    it("answers 403 for a token of another cluster, and for a valid token on another cluster's path", async () => {
      const other = api.clientWith(OTHER_CLUSTER_TOKEN);
      assert.equal((await apiError(other.getCluster())).status, 403);
      assert.equal((await apiError(api.clientWith(OTHER_CLUSTER_TOKEN, "other").getCluster())).status, 403);
      const wrongPath = await apiError(api.clientWith(TOKEN, "other").listNodes());
      assert.equal(wrongPath.status, 403);
      assert.equal(wrongPath.code, "Forbidden");
    });

    it("answers 404 ClusterNotFound for a cluster nobody serves or holds tokens for, 403 when a token of an unserved cluster asks for it", async () => {
      const unknown = await apiError(api.clientWith(TOKEN, "nowhere").getCluster());
      assert.equal(unknown.status, 404);
      assert.equal(unknown.code, "ClusterNotFound");
      assert.equal((await apiError(api.clientWith(TOKEN, "nowhere").listNodes())).code, "ClusterNotFound");
      // A token configured for a cluster this service does not serve only ever yields 403.
      assert.equal((await apiError(api.clientWith(OTHER_CLUSTER_TOKEN, "nowhere").getCluster())).status, 403);
    });

    it("accepts every configured token of the cluster (rotation)", async () => {
      assert.equal((await api.clientWith(ROTATED_TOKEN).getCluster()).id, "example");
      assert.equal((await api.client.getCluster()).id, "example");
    });

    it("authenticates before reading the body", async () => {
      const response = await api.clientWith(undefined).raw("POST", NODES, { body: "{not json", headers: json });
      assert.equal(response.status, 401);
    });

    it("serves probes, metrics and the OpenAPI document without a token", async () => {
      const anonymous = api.clientWith(undefined);
      assert.equal((await anonymous.raw("GET", "/healthz")).status, 200);
      const ready = await anonymous.readiness();
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, "ready");
      const metrics = await anonymous.raw("GET", "/metrics");
      assert.equal(metrics.status, 200);
      assert.match(String(metrics.body), /nodefleet_reconcile_queue_depth\{cluster="example"\}/);
      const openapi = await anonymous.raw("GET", "/openapi.json");
      assert.equal(openapi.status, 200);
      assert.ok((openapi.body as { paths: Record<string, unknown> }).paths["/api/v1/clusters/{clusterId}/nodes"]);
    });
  });

  describe("cloud API budget", () => {
    it("answers Karpenter's polling (Get, List, instance types) from the store and the cached catalog, without cloud requests", async () => {
      const { node } = await api.client.createNode({ uniqueID: "budget", pool: "hel1-burst" }, { waitSeconds: 30 });
      for (let i = 0; i < 20; i++) {
        await api.client.getNode(node.nodeID);
        await api.client.listNodes();
        await api.client.instanceTypes();
      }
      const metrics = String((await api.client.raw("GET", "/metrics")).body);
      assert.doesNotMatch(metrics, /^nodefleet_cloud_api_requests_total\{/m);
    });
  });

  describe("hostile input", () => {
    it("answers malformed JSON with 400, an oversized body with 413, another media type with 415", async () => {
      const malformed = await api.client.raw("POST", NODES, { body: '{"uniqueID": ', headers: json });
      assert.equal(malformed.status, 400);
      assertErrorShape(malformed.body, "MalformedJson");
      const oversized = await api.client.raw("POST", NODES, {
        body: JSON.stringify({ uniqueID: "x", pad: "a".repeat(200_000) }),
        headers: json,
      });
      assert.equal(oversized.status, 413);
      assertErrorShape(oversized.body, "PayloadTooLarge");
      const text = await api.client.raw("POST", NODES, { body: "<node/>", headers: { "content-type": "application/xml" } });
      assert.equal(text.status, 415);
      assertErrorShape(text.body, "UnsupportedMediaType");
      const empty = await api.client.raw("POST", NODES, { body: "", headers: json });
      assert.equal(empty.status, 400);
      assertErrorShape(empty.body);
    });

    it("treats an empty JSON body as no body: a bodyless DELETE with Content-Type application/json works", async () => {
      const { node } = await api.client.createNode({ uniqueID: "delete-with-json-header", pool: "hel1-burst" });
      const response = await api.client.raw("DELETE", `${NODES}/${node.nodeID}`, { body: "", headers: json });
      assert.equal(response.status, 202, JSON.stringify(response.body));
      assert.deepEqual(response.body, { nodeID: node.nodeID, status: "TERMINATING" });
      const create = await api.client.raw("POST", NODES, { body: "", headers: json });
      assert.equal(create.status, 400);
      assertErrorShape(create.body, "ValidationError");
    });

    it("answers paths the router refuses (bad percent-encoding, overlong parameter) in the error shape", async () => {
      const badEncoding = await api.client.raw("GET", `${NODES}/%ff`);
      assert.equal(badEncoding.status, 400);
      assertErrorShape(badEncoding.body, "BadRequest");
      const overlong = await api.client.raw("GET", `${NODES}/${"a".repeat(500)}`);
      assert.equal(overlong.status, 414);
      assertErrorShape(overlong.body, "UriTooLong");
      assert.doesNotMatch(JSON.stringify(overlong.body), /aaaaaaaa/, "the path is not echoed");
    });

    it("answers unknown routes with 404 in the error shape", async () => {
      const response = await api.client.raw("GET", "/api/v1/nothing-here");
      assert.equal(response.status, 404);
      assertErrorShape(response.body, "RouteNotFound");
    });

    it("refuses a label key whose prefix is longer than 253 characters, naming the rule", async () => {
      // A DNS subdomain of n characters (n <= 255), in labels of at most 63.
      const prefix = (n: number) =>
        Array.from({ length: 4 }, () => "a".repeat(63))
          .join(".")
          .slice(0, n);
      const tooLong = prefix(254);
      assert.equal(tooLong.length, 254);
      const refused = await api.client.raw("POST", NODES, {
        body: JSON.stringify({ uniqueID: "long-prefix", pool: "hel1-burst", labels: { [`${tooLong}/team`]: "a" } }),
        headers: json,
      });
      assert.equal(refused.status, 400);
      assertErrorShape(refused.body, "ValidationError");
      assert.match(JSON.stringify(refused.body), /prefixes .*at most 253 characters/);
      const longest = prefix(253);
      assert.equal(longest.length, 253);
      const accepted = await api.client.raw("POST", NODES, {
        body: JSON.stringify({ uniqueID: "longest-prefix", pool: "hel1-burst", labels: { [`${longest}/team`]: "a" } }),
        headers: json,
      });
      assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
    });

    it("accepts waitSeconds only as decimal digits: 0x10, empty, ' 5', 1e2 and repeats are 400 naming the field", async () => {
      const body = JSON.stringify({ uniqueID: "wait-syntax", pool: "hel1-burst" });
      for (const query of [
        "waitSeconds=0x10",
        "waitSeconds=",
        "waitSeconds=%205",
        "waitSeconds=1e2",
        "waitSeconds=5.0",
        "waitSeconds=1&waitSeconds=2",
        "waitSeconds=121",
      ]) {
        const response = await api.client.raw("POST", `${NODES}?${query}`, { body, headers: json });
        assert.equal(response.status, 400, `${query} -> ${response.status}`);
        assertErrorShape(response.body, "ValidationError");
        assert.match(JSON.stringify(response.body), /querystring\.waitSeconds/, query);
      }
      const fine = await api.client.raw("POST", `${NODES}?waitSeconds=0`, { body, headers: json });
      assert.equal(fine.status, 201, JSON.stringify(fine.body));
    });

    it("answers what the HTTP parser refuses (garbage, oversized headers) in the error shape", async () => {
      const exchange = (request: string) =>
        new Promise<string>((resolve, reject) => {
          const socket = net.connect(Number(new URL(api.baseUrl).port), "127.0.0.1");
          let received = "";
          socket.on("data", (chunk) => (received += chunk));
          socket.on("error", reject);
          socket.on("close", () => resolve(received));
          socket.write(request);
        });
      const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) as unknown;
      const garbage = await exchange("NOT HTTP AT ALL\r\n\r\n");
      assert.match(garbage, /^HTTP\/1.1 400 /);
      assertErrorShape(bodyOf(garbage), "BadRequest");
      const huge = await exchange(`GET /healthz HTTP/1.1\r\nHost: t\r\nX-Pad: ${"a".repeat(20_000)}\r\n\r\n`);
      assert.match(huge, /^HTTP\/1.1 431 /);
      assertErrorShape(bodyOf(huge), "HeadersTooLarge");
    });

    it("never answers a random body or path with a 5xx", async function () {
      this.timeout(60_000);
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string(),
            fc.json(),
            fc.jsonValue().map((v) => JSON.stringify(v)),
          ),
          fc.constantFrom("POST", "DELETE", "GET"),
          fc.oneof(
            fc.constant(""),
            fc.string({ maxLength: 20 }).map((s) => `/${encodeURIComponent(s)}`),
          ),
          async (body, method, suffix) => {
            const response = await api.client.raw(method, `${NODES}${suffix}`, method === "GET" ? {} : { body, headers: json });
            assert.ok(response.status < 500, `${method} ${suffix} ${body} -> ${response.status}`);
            if (response.status >= 400) assertErrorShape(response.body);
          },
        ),
        { numRuns: 150 },
      );
    });

    it("never answers random raw path segments or query strings, on any route, with a 5xx", async function () {
      this.timeout(60_000);
      const { node } = await api.client.createNode({ uniqueID: "fuzz-target", pool: "hel1-burst" });
      // Raw (not encoded) text: stray '%', '?', '#', unicode, very long parameters.
      const raw = fc.oneof(
        fc.string({ maxLength: 30 }),
        fc.string({ unit: fc.constantFrom("%", "f", "0", "a", "-", "/", "?", "&", "=", "[", "]", ".", "é", "\u0000"), maxLength: 40 }),
        fc.constantFrom(
          "%",
          "%zz",
          "%c3%28",
          "a".repeat(300),
          "..",
          "%2e%2e",
          "pool[]=x",
          "waitSeconds=-1",
          "waitSeconds=121",
          "waitSeconds=1e9",
        ),
      );
      const routes = [
        ["GET", "/api/v1/clusters/{c}"],
        ["GET", "/api/v1/clusters/{c}/instance-types"],
        ["GET", "/api/v1/clusters/{c}/operations"],
        ["GET", "/api/v1/clusters/{c}/nodes"],
        ["POST", "/api/v1/clusters/{c}/nodes"],
        ["GET", "/api/v1/clusters/{c}/nodes/{n}"],
        ["DELETE", "/api/v1/clusters/{c}/nodes/{n}"],
        ["GET", "/readyz"],
      ] as const;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...routes), raw, raw, raw, async ([method, template], cluster, nodeId, query) => {
          const path = template
            .replace("{c}", cluster.length % 2 === 0 ? "example" : cluster)
            .replace("{n}", nodeId.length % 3 === 0 ? node.nodeID : nodeId);
          const body = method === "POST" ? { body: JSON.stringify({ uniqueID: "fuzz-q", pool: "hel1-burst" }), headers: json } : {};
          let response;
          try {
            response = await api.client.raw(method, `${path}?${query}`, body);
          } catch (error) {
            // fetch itself refuses some URLs (it never reached the service).
            if (error instanceof TypeError) return;
            throw error;
          }
          assert.ok(response.status < 500, `${method} ${path}?${query} -> ${response.status} ${JSON.stringify(response.body)}`);
          if (response.status >= 400) assertErrorShape(response.body);
        }),
        { numRuns: 200 },
      );
    });
  });

  describe("shutdown", () => {
    it("answers a create waiting under waitSeconds at once when the service closes", async function () {
      // Without the release the close would wait out waitSeconds (120 s): longer than this test may take.
      this.timeout(20_000);
      const slow = new FakeStackEngine();
      slow.delayMs = 10 * 60_000;
      const api2 = await startTestApi({ engine: slow, shutdownGraceMs: 200 });
      const waiting = api2.client.createNode({ uniqueID: "waiting", pool: "hel1-burst" }, { waitSeconds: 120 });
      await eventually(async () => (slow.running > 0 ? true : undefined));
      await api2.close();
      const { node } = await waiting;
      assert.equal(node.status, "PROVISIONING", "answered with the claim as it is; it is reconciled on the next start");
    });

    it("answers requests arriving during shutdown with 503 (error shape; readyz reports stopping)", async () => {
      const body = JSON.stringify({ uniqueID: "during-shutdown", pool: "hel1-burst" });
      const exchange = async (pipelined: string): Promise<string> => {
        const test = await startTestApi({ engine: new FakeStackEngine() });
        const socket = net.connect(Number(new URL(test.baseUrl).port), "127.0.0.1");
        let received = "";
        socket.on("data", (chunk) => (received += chunk));
        await new Promise((resolve) => socket.once("connect", resolve));
        // The first request is in flight (its body incomplete) when the close begins; the second is pipelined behind it.
        socket.write(
          `POST ${NODES} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
        const closed = test.close();
        await new Promise((resolve) => setTimeout(resolve, 100));
        socket.write(`${body.slice(5)}${pipelined}`);
        await closed;
        await eventually(() => (received.includes("HTTP/1.1 503") && received.trimEnd().endsWith("}") ? true : undefined));
        socket.destroy();
        return received;
      };
      const apiAnswer = await exchange(`GET /api/v1/clusters/example HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      assert.match(apiAnswer, /HTTP\/1.1 201/, "the request in flight is finished");
      assertErrorShape(JSON.parse(apiAnswer.slice(apiAnswer.lastIndexOf("\r\n\r\n") + 4)), "Unavailable");
      const readyAnswer = await exchange("GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n");
      assert.deepEqual(JSON.parse(readyAnswer.slice(readyAnswer.lastIndexOf("\r\n\r\n") + 4)).status, "stopping");
    });
  });
});

function fleetWithClusterId(id: string): Record<string, unknown> {
  const values = configValues(exampleConfig());
  return { ...values, "nodefleet:cluster": { ...(values["nodefleet:cluster"] as Record<string, unknown>), id } };
}

describe("node identity", () => {
  it("derives a nodeID from any valid uniqueID such that hostname and Hetzner server name stay valid with the longest cluster id", () => {
    const longestClusterId = "c".repeat(20);
    assert.equal(parseFleetSpec(fleetWithClusterId(longestClusterId)).cluster.id, longestClusterId);
    assert.throws(() => parseFleetSpec(fleetWithClusterId("c".repeat(21))), "the cluster id is bounded, so the hostname is too");
    const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
    fc.assert(
      // Any Kubernetes object name (a DNS subdomain of at most 253 characters).
      fc.property(
        fc
          .stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?){0,3}$/)
          .filter((id) => id.length <= 253),
        (uniqueID) => {
          const nodeId = nodeIdFor(uniqueID);
          assert.equal(nodeIdFor(uniqueID), nodeId, "stable");
          const hostname = hostnameFor({ id: longestClusterId }, nodeId);
          assert.match(hostname, dnsLabel);
          assert.ok(hostname.length <= 63);
          const serverName = generationServerName(hostname, "zzzzzz".slice(0, GENERATION_SUFFIX_LENGTH));
          assert.match(serverName, dnsLabel);
          assert.ok(serverName.length <= 63);
        },
      ),
    );
  });
});

describe("rate limiting", () => {
  it("limits failed authentications per client address, whatever token each attempt guesses; valid tokens are unaffected", async () => {
    const api = await startTestApi({ unauthenticatedPerMinute: 5 });
    try {
      for (let i = 0; i < 5; i++) assert.equal((await apiError(api.clientWith(`guess-${i}-0123456789abcdef`).getCluster())).status, 401);
      const limited = await apiError(api.clientWith("guess-last-0123456789abcdef").getCluster());
      assert.equal(limited.status, 429);
      assert.equal(limited.code, "RateLimited");
      assert.match(limited.message, /without a valid token/);
      assert.equal((await apiError(api.clientWith(undefined).getCluster())).status, 429, "no token at all shares the address's budget");
      assert.equal((await api.client.getCluster()).id, "example");
    } finally {
      await api.close();
    }
  });

  it("limits failed authentications even when the per-token limit is off", async () => {
    const api = await startTestApi({ rateLimitPerMinute: false, unauthenticatedPerMinute: 2 });
    try {
      for (let i = 0; i < 2; i++) await apiError(api.clientWith(`guess-${i}-0123456789abcdef`).getCluster());
      assert.equal((await apiError(api.clientWith("guess-x-0123456789abcdef").getCluster())).status, 429);
      for (let i = 0; i < 5; i++) assert.equal((await api.client.getCluster()).id, "example");
    } finally {
      await api.close();
    }
  });

  it("limits requests per token with 429 RateLimited in the error shape, other tokens unaffected", async () => {
    const api = await startTestApi({ rateLimitPerMinute: 3 });
    try {
      for (let i = 0; i < 3; i++) await api.client.getCluster();
      const limited = await apiError(api.client.getCluster());
      assert.equal(limited.status, 429);
      assert.equal(limited.code, "RateLimited");
      assert.equal((await api.clientWith(ROTATED_TOKEN).getCluster()).id, "example");
    } finally {
      await api.close();
    }
  });
});
