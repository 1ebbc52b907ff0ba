/**
 * Pools over several locations on the local cloud, real engine (issue #39 part 2): a static pool's
 * members spread over hel1 and fsn1 (member i -> locations[i mod 2]) with spread groups of one
 * location each and Nodes Ready, zone = the server's location; and an autoscaled pool whose cpx21 is
 * sold out in hel1 only (NODEFLEET_SIM_OUT_OF_STOCK cpx21@hel1): the scaling API offers it per
 * location and creates it in fsn1, through `nodefleet serve --engine automation`, each of its
 * members in a spread group of its own location.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { awaitRunning, deleteUntilGone } from "../../support/karpenterConformance";
import { allPoolServersReady, editLocalPools, hcloudGet, isReady, poolNodes } from "../../support/localFleet";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";
import { until } from "../../support/until";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

describe("pools over several locations on the local cloud", function () {
  this.timeout(900_000);
  let dir: string | undefined;
  let started: LocalCloudWithServe | undefined;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-locations-"));
    started = await startLocalCloudWithServe(
      dir,
      (cloud) =>
        editLocalPools(cloud, (pools) =>
          pools.map((p) => {
            const { location: _location, ...rest } = p;
            return p.name === "local-general"
              ? { ...rest, replicas: 4, locations: ["hel1", "fsn1"] }
              : { ...rest, locations: ["hel1", "fsn1"] };
          }),
        ),
      { NODEFLEET_SIM_OUT_OF_STOCK: "cpx21@hel1" },
    );
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("spreads a static pool's members over the locations, one location per spread group, Nodes Ready", async () => {
    const { cloud } = started!;
    const servers = await allPoolServersReady(cloud, "local-general");
    const detail = await Promise.all(servers.map((s) => hcloudGet(cloud, `/servers/${s.id}`)));
    const where = new Map(detail.map((d) => [String(d.server.name), String(d.server.location.name)]));
    const byIndex = [...where].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, location]) => location);
    assert.deepEqual(byIndex, ["hel1", "fsn1", "hel1", "fsn1"]);
    const groups = new Map<number, Set<string>>();
    for (const d of detail) {
      const group = Number(d.server.placement_group?.id);
      assert.ok(Number.isInteger(group), `${d.server.name} is in a spread group`);
      groups.set(group, (groups.get(group) ?? new Set()).add(String(d.server.location.name)));
    }
    assert.equal(groups.size, 2, "one spread group per location");
    for (const locations of groups.values()) assert.equal(locations.size, 1);
    const nodes = await poolNodes(cloud, "local-general");
    assert.equal(nodes.filter(isReady).length, 4);
    for (const node of nodes)
      assert.equal(node.metadata.labels["topology.kubernetes.io/zone"], where.get(node.metadata.name), node.metadata.name);
  });

  it("creates a type sold out in hel1 in fsn1 through the scaling API, each member in a spread group of its location", async () => {
    const { cloud, serve } = started!;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 600_000, () => `serve said:\n${serve.stderr().slice(-3000)}`, 1000);
    await waitFor("cpx21 offered as sold out in hel1 only", async () => {
      const cpx21 = (await serve.client.instanceTypes()).find((t) => t.pool === "local-burst" && t.name === "cpx21");
      const offers = cpx21?.offerings.map((o) => `${o.zone}:${o.available}`).join(",");
      return offers === "hel1:false,fsn1:true" ? true : undefined;
    });
    const { node } = await serve.client.createNode({ uniqueID: "fallback", pool: "local-burst", instanceType: "cpx21" });
    assert.equal(node.zone, "fsn1");
    const { node: home } = await serve.client.createNode({ uniqueID: "home", pool: "local-burst", instanceType: "cpx31", zone: "hel1" });
    assert.equal(home.zone, "hel1");
    const running = await awaitRunning(serve.client, [node.nodeID, home.nodeID], waitFor, "nodefleet:///local/");
    assert.deepEqual(running.map((r) => r.zone).sort(), ["fsn1", "hel1"]);
    const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers as Array<Record<string, any>>;
    assert.deepEqual(servers.map((s) => `${s.server_type.name}@${s.location.name}`).sort(), ["cpx21@fsn1", "cpx31@hel1"]);
    // Spread groups stay per location: each member's group holds servers of its location only.
    const groups = (await hcloudGet(cloud, "/placement_groups")).placement_groups as Array<{ id: number; name: string; servers: number[] }>;
    for (const server of servers) {
      const group = groups.find((g) => g.id === server.placement_group?.id);
      assert.ok(group, `${server.name} is in a spread group`);
      const locations = new Set(servers.filter((s) => group.servers.includes(s.id)).map((s) => s.location.name));
      assert.deepEqual([...locations], [server.location.name], `${group.name} holds ${server.location.name} servers only`);
    }
    assert.notEqual(servers[0]!.placement_group?.id, servers[1]!.placement_group?.id, "two locations, two groups");
    await waitFor("both members' Nodes Ready in their zones", async () => {
      const nodes = (await poolNodes(cloud, "local-burst")).filter(isReady);
      const zones = nodes.map((n) => n.metadata.labels["topology.kubernetes.io/zone"]).sort();
      return zones.join(",") === "fsn1,hel1" ? true : undefined;
    });
    await deleteUntilGone(serve.client, [node.nodeID, home.nodeID], waitFor);
  });
});
