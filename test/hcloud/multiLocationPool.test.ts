import { strict as assert } from "node:assert";
import type { RecordedResource } from "../../automation/mocks/runUnderMocks";
import { hcloudStaticPoolConfig, rawFleetConfig, runFleetProgramUnderMocks } from "../support/fleetConfigFixture";

const SERVER = "hcloud:index/server:Server";
const PLACEMENT_GROUP = "hcloud:index/placementGroup:PlacementGroup";
const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);

describe("a static hcloud pool with several locations, under mocks", function () {
  this.timeout(120_000);

  it("spreads members i -> locations[i mod n] and keeps each spread group to one location", async () => {
    const config = rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 25, location: undefined, locations: ["fsn1", "nbg1"] })] });
    const { resources } = await runFleetProgramUnderMocks(config);
    const servers = ofType(resources, SERVER);
    assert.equal(servers.length, 25);
    for (const server of servers) {
      const index = Number(/^example-hel1-general-(\d+)-/.exec(server.name)?.[1]);
      assert.equal(server.inputs.location, index % 2 === 0 ? "fsn1" : "nbg1", server.name);
    }
    const groups = ofType(resources, PLACEMENT_GROUP);
    // 13 in fsn1 (the first location keeps the pg-<index> names), 12 in nbg1: two groups each.
    assert.deepEqual(groups.map((g) => g.name).sort(), [
      "example-hel1-general-pg-0",
      "example-hel1-general-pg-1",
      "example-hel1-general-pg-nbg1-0",
      "example-hel1-general-pg-nbg1-1",
    ]);
    const byGroup = new Map<unknown, RecordedResource[]>();
    for (const s of servers) byGroup.set(s.inputs.placementGroupId, [...(byGroup.get(s.inputs.placementGroupId) ?? []), s]);
    assert.equal(byGroup.size, 4);
    for (const [group, members] of byGroup) {
      assert.ok(members.length <= 10, `group ${String(group)} holds ${members.length}`);
      assert.equal(new Set(members.map((m) => m.inputs.location)).size, 1, `group ${String(group)} spans locations`);
    }
  });

  it("declares a one-location pool's groups as before", async () => {
    const { resources } = await runFleetProgramUnderMocks(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 12 })] }));
    assert.deepEqual(
      ofType(resources, PLACEMENT_GROUP)
        .map((g) => g.name)
        .sort(),
      ["example-hel1-general-pg-0", "example-hel1-general-pg-1"],
    );
    assert.ok(ofType(resources, SERVER).every((s) => s.inputs.location === "hel1"));
  });
});
