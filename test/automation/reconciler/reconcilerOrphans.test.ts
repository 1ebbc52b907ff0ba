/**
 * The orphan reclaimer against the simulated cloud: a server labelled with the cluster that
 * neither the store nor git's stack knows is deleted after the grace period (only reported in dry
 * run); known and git-owned servers are left alone; every decision is counted.
 */
import { strict as assert } from "node:assert";
import { ServiceMetrics } from "../../../automation/api/serviceMetrics";
import { HcloudClient } from "../../../automation/hcloud/hcloudClient";
import {
  OrphanReclaimer,
  findOrphans,
  hcloudInventory,
  simulatedInventory,
  type InventoryServer,
} from "../../../automation/reconciler/orphanReclaimer";
import { SimulatedCloud } from "../../../automation/simulated/simulatedCloud";
import { tempDataDir } from "../../support/apiHarness";

const HOUR = 3600_000;

describe("orphan reclaimer", () => {
  it("finds servers neither a claim nor a static pool accounts for", () => {
    const servers: InventoryServer[] = [
      { id: "1", name: "a", createdAt: "", labels: { "nodefleet.io/node": "k1", "nodefleet.io/pool": "hel1-burst" } },
      { id: "2", name: "b", createdAt: "", labels: { "nodefleet.io/node": "k2", "nodefleet.io/pool": "hel1-burst" } },
      { id: "3", name: "c", createdAt: "", labels: { "nodefleet.io/node": "hel1-general-0", "nodefleet.io/pool": "hel1-general" } },
      { id: "4", name: "d", createdAt: "", labels: {} },
    ];
    assert.deepEqual(
      findOrphans(servers, new Set(["k1"]), new Set(["hel1-general"])).map((s) => s.id),
      ["2", "4"],
    );
  });

  it("deletes an injected unknown server after the grace period, keeps known ones, counts each decision", async () => {
    const cloud = new SimulatedCloud(tempDataDir("nodefleet-orphans-"));
    let now = Date.parse("2026-06-01T12:00:00Z");
    const orphan = cloud.injectOrphanServer({
      name: "example-lost",
      labels: { "nodefleet.io/cluster": "example", "nodefleet.io/pool": "hel1-burst", "nodefleet.io/node": "klost0000000" },
      createdAt: new Date(now - 10 * 60_000),
    });
    const known = cloud.injectOrphanServer({
      name: "example-known",
      labels: { "nodefleet.io/cluster": "example", "nodefleet.io/pool": "hel1-burst", "nodefleet.io/node": "kknown000000" },
      createdAt: new Date(now - 2 * HOUR),
    });
    const otherCluster = cloud.injectOrphanServer({
      name: "other",
      labels: { "nodefleet.io/cluster": "other" },
      createdAt: new Date(now - 2 * HOUR),
    });
    const metrics = new ServiceMetrics({ defaultMetrics: false });
    const reclaimer = new OrphanReclaimer({
      clusterId: "example",
      inventory: simulatedInventory(cloud, metrics),
      graceMs: 30 * 60_000,
      metrics,
      now: () => now,
    });
    reclaimer.knownNodes = () => new Set(["kknown000000"]);

    const first = await reclaimer.sweep();
    assert.deepEqual(
      first.map((d) => [d.server.id, d.action]),
      [[orphan.id, "waiting"]],
    );
    // The grace period runs from creation and from first being seen unknown, whichever is later.
    now += 25 * 60_000;
    assert.deepEqual(
      (await reclaimer.sweep()).map((d) => d.action),
      ["waiting"],
    );
    now += 6 * 60_000;
    const third = await reclaimer.sweep();
    assert.deepEqual(
      third.map((d) => [d.server.id, d.action]),
      [[orphan.id, "deleted"]],
    );
    const remaining = cloud
      .listServers()
      .map((s) => s.id)
      .sort();
    assert.deepEqual(remaining, [known.id, otherCluster.id].sort());
    const text = await metrics.registry.metrics();
    assert.match(text, /nodefleet_orphan_servers_total\{cluster="example",action="waiting"\} 2/);
    assert.match(text, /nodefleet_orphan_servers_total\{cluster="example",action="deleted"\} 1/);
    assert.match(text, /nodefleet_cloud_api_requests_total\{provider="simulated",operation="list_servers"\} 3/);
  });

  it("only reports in dry run", async () => {
    const cloud = new SimulatedCloud(tempDataDir("nodefleet-orphans-"));
    const orphan = cloud.injectOrphanServer({
      name: "stray",
      labels: { "nodefleet.io/cluster": "example" },
      createdAt: new Date(Date.now() - 2 * HOUR),
    });
    const reclaimer = new OrphanReclaimer({ clusterId: "example", inventory: simulatedInventory(cloud), graceMs: 0, dryRun: true });
    const decisions = await reclaimer.sweep();
    assert.deepEqual(
      decisions.map((d) => d.action),
      ["dry-run"],
    );
    assert.ok(cloud.getServer(orphan.id), "still there");
  });

  it("lists a 100-server cluster in 2 Hetzner requests per sweep (24 an hour at the default 5-minute interval)", async () => {
    const servers = Array.from({ length: 100 }, (_, i) => ({
      id: i + 1,
      name: `s${i}`,
      status: "running",
      created: "2026-01-01T00:00:00Z",
      labels: { "nodefleet.io/cluster": "example", "nodefleet.io/node": `k${i}` },
    }));
    const requests: string[] = [];
    const fetchStub = (async (url: string) => {
      requests.push(url);
      const page = Number(new URL(url).searchParams.get("page"));
      const items = servers.slice((page - 1) * 50, page * 50);
      return new Response(
        JSON.stringify({ servers: items, meta: { pagination: { next_page: page * 50 < servers.length ? page + 1 : null } } }),
        { status: 200 },
      );
    }) as unknown as typeof fetch;
    const client = new HcloudClient({ token: "t", fetch: fetchStub });
    const reclaimer = new OrphanReclaimer({ clusterId: "example", inventory: hcloudInventory(client) });
    reclaimer.knownNodes = () => new Set(servers.map((s) => s.labels["nodefleet.io/node"]));
    assert.deepEqual(await reclaimer.sweep(), []);
    assert.equal(requests.length, 2);
    assert.ok(requests.every((u) => u.includes("label_selector=nodefleet.io%2Fcluster%3Dexample")));
  });
});
