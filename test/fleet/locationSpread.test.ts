import { strict as assert } from "node:assert";
import fc from "fast-check";
import { spreadAcrossLocations } from "../../components/fleet/locationSpread";
import { type HcloudStaticPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { planHcloudServers, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { planRollout } from "../../components/fleet/rolloutPlan";
import { hcloudAutoscaledPoolConfig, hcloudStaticPoolConfig, rawFleetConfig, specProblems } from "../support/fleetConfigFixture";

const ALL = ["fsn1", "nbg1", "hel1", "ash", "hil", "sin"];
const nodeIdsArb = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { maxLength: 40 });
const locationsArb = fc.uniqueArray(fc.constantFrom(...ALL), { minLength: 1, maxLength: ALL.length });
const asCurrent = (assigned: Map<string, string>) => [...assigned].map(([nodeId, location]) => ({ nodeId, location }));

function countsOf(assigned: Map<string, string>, locations: readonly string[]): number[] {
  return locations.map((l) => [...assigned.values()].filter((v) => v === l).length);
}

describe("location spread (static pools with several locations)", () => {
  it("puts member i of a new pool in locations[i mod n]", () => {
    fc.assert(
      fc.property(nodeIdsArb, locationsArb, (nodeIds, locations) => {
        const assigned = spreadAcrossLocations({ nodeIds, locations, current: [] });
        nodeIds.forEach((id, i) => assert.equal(assigned.get(id), locations[i % locations.length]));
      }),
    );
  });

  it("gives every member a listed location, and a run given its own result changes nothing", () => {
    fc.assert(
      fc.property(nodeIdsArb, locationsArb, locationsArb, (nodeIds, before, after) => {
        const first = spreadAcrossLocations({ nodeIds, locations: before, current: [] });
        const second = spreadAcrossLocations({ nodeIds, locations: after, current: asCurrent(first) });
        assert.deepEqual([...second.keys()].sort(), [...nodeIds].sort());
        for (const location of second.values()) assert.ok(after.includes(location));
        const third = spreadAcrossLocations({ nodeIds, locations: after, current: asCurrent(second) });
        assert.deepEqual(third, second);
      }),
    );
  });

  it("never moves an existing member when members or locations are added", () => {
    fc.assert(
      fc.property(nodeIdsArb, nodeIdsArb, locationsArb, locationsArb, (nodeIds, more, locations, extra) => {
        const before = spreadAcrossLocations({ nodeIds, locations, current: [] });
        const grown = [...nodeIds, ...more.filter((id) => !nodeIds.includes(id))];
        const wider = [...locations, ...extra.filter((l) => !locations.includes(l))];
        const after = spreadAcrossLocations({ nodeIds: grown, locations: wider, current: asCurrent(before) });
        for (const id of nodeIds) assert.equal(after.get(id), before.get(id), `member ${id} moved`);
      }),
    );
  });

  it("moves only a removed location's members, to the emptiest remaining locations", () => {
    fc.assert(
      fc.property(
        nodeIdsArb,
        locationsArb.filter((l) => l.length >= 2),
        fc.nat(),
        (nodeIds, locations, pick) => {
          const removed = locations[pick % locations.length];
          const before = spreadAcrossLocations({ nodeIds, locations, current: [] });
          const remaining = locations.filter((l) => l !== removed);
          const after = spreadAcrossLocations({ nodeIds, locations: remaining, current: asCurrent(before) });
          for (const id of nodeIds) if (before.get(id) !== removed) assert.equal(after.get(id), before.get(id));
          // Balanced before, so still balanced after: the fullest and emptiest differ by at most one.
          const counts = countsOf(after, remaining);
          assert.ok(Math.max(...counts) - Math.min(...counts) <= 1, `counts ${counts.join(",")}`);
        },
      ),
    );
  });

  it("keeps a member moving between listed locations where its first-listed server is", () => {
    const assigned = spreadAcrossLocations({
      nodeIds: ["0"],
      locations: ["nbg1", "fsn1"],
      current: [
        { nodeId: "0", location: "fsn1" },
        { nodeId: "0", location: "nbg1" },
        { nodeId: "gone", location: "nbg1" },
      ],
    });
    assert.deepEqual([...assigned], [["0", "nbg1"]]);
  });

  it("refuses an empty location list", () => {
    assert.throws(() => spreadAcrossLocations({ nodeIds: ["0"], locations: [], current: [] }), /at least one location/);
  });
});

describe("fleet spec: locations", () => {
  const multi = { location: undefined, locations: ["fsn1", "nbg1"] };

  it("parses a pool with location exactly as before (no locations key)", () => {
    const pool = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig()] })).pools[0];
    assert.equal("locations" in pool, false);
    assert.equal((pool as HcloudStaticPool).location, "hel1");
  });

  it("parses locations and takes the first as the pool's location", () => {
    const pool = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig(multi)] })).pools[0] as HcloudStaticPool;
    assert.deepEqual(pool.locations, ["fsn1", "nbg1"]);
    assert.equal(pool.location, "fsn1");
  });

  it("refuses locations in two network zones, naming the field and the rule", () => {
    const problems = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, locations: ["fsn1", "ash"] })] }));
    assert.ok(
      problems.some((p) => /^nodefleet:pools\[0\]\.locations: locations must all be in one network zone.*ash \(us-east\)/.test(p)),
      problems.join("\n"),
    );
  });

  it("refuses locations outside the network's zone", () => {
    const problems = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, locations: ["ash"] })] }));
    assert.ok(
      problems.some((p) => /^nodefleet:pools\[0\]\.locations: .*us-east, outside the network's zone eu-central/.test(p)),
      problems.join("\n"),
    );
  });

  it("refuses both location and locations, neither, duplicates and unknown locations", () => {
    const both = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, location: "fsn1" })] }));
    assert.ok(
      both.some((p) => p === "nodefleet:pools[0].locations: set either location or locations, not both"),
      both.join("\n"),
    );
    const neither = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ location: undefined })] }));
    assert.ok(
      neither.some((p) => p.startsWith("nodefleet:pools[0].location: location is required")),
      neither.join("\n"),
    );
    const twice = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, locations: ["fsn1", "fsn1"] })] }));
    assert.ok(
      twice.some((p) => p === "nodefleet:pools[0].locations: locations entries must be unique"),
      twice.join("\n"),
    );
    const unknown = specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, locations: ["fsn1", "mars1"] })] }));
    assert.ok(
      unknown.some((p) => /^nodefleet:pools\[0\]\.locations\[1\]: locations entries must be a Hetzner Cloud location/.test(p)),
      unknown.join("\n"),
    );
  });

  it("accepts several locations with spread placement, counting groups per location; autoscaled pools only with placement none", () => {
    assert.deepEqual(specProblems(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, placement: "spread" })] })), []);
    // 41 servers in one location need 5 groups; over 3 locations at most ceil(41 / 10) + 2 = 7.
    const pools = (locations: string[] | undefined) =>
      Array.from({ length: 10 }, (_, i) =>
        hcloudStaticPoolConfig({
          name: `p${i}`,
          replicas: 41,
          network: "public",
          ...(locations ? { location: undefined, locations } : {}),
        }),
      );
    const cluster = { nodeAddress: "public", cniEncryption: "cilium-wireguard" };
    assert.deepEqual(specProblems(rawFleetConfig({ cluster, pools: pools(undefined) })), []);
    const spreadOut = specProblems(rawFleetConfig({ cluster, pools: pools(["fsn1", "nbg1", "hel1"]) }));
    assert.ok(
      spreadOut.some((p) => /at least 70 spread placement groups/.test(p)),
      spreadOut.join("\n"),
    );
    // An autoscaled pool over several locations keeps spread groups per location, counted at worst.
    assert.deepEqual(specProblems(rawFleetConfig({ pools: [hcloudAutoscaledPoolConfig({ ...multi })] })), []);
    const wide = (maxNodes: number) =>
      specProblems(
        rawFleetConfig({
          cluster,
          pools: [hcloudAutoscaledPoolConfig({ ...multi, network: "public", limits: { maxNodes, cpu: 720, memoryGiB: 1440 } })],
        }),
      );
    const groupsNeeded = multi.locations.length * 30;
    assert.ok(
      wide(300).some((p) => new RegExp(`at least ${groupsNeeded} spread placement groups`).test(p)),
      `${multi.locations.length} locations x 30 groups: ${wide(300).join("\n")}`,
    );
    assert.deepEqual(
      wide(200).filter((p) => /spread placement groups/.test(p)),
      [],
    );
  });

  it("static members follow the spread into their servers, and a one-location pool is unchanged", () => {
    const spec = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig({ ...multi, replicas: 5 })] }));
    const pool = spec.pools[0] as HcloudStaticPool;
    const { kubeconfig: _k, ...cluster } = spec.cluster;
    const members = staticHcloudMembers(cluster, pool);
    assert.deepEqual(
      members.map((m) => [m.location, m.labels["topology.kubernetes.io/zone"]]),
      ["fsn1", "nbg1", "fsn1", "nbg1", "fsn1"].map((l) => [l, l]),
    );
    // Given the previous run's servers, adding hel1 and two replicas moves nobody.
    const current = members.map((m) => ({ nodeId: m.nodeId, location: m.location }));
    const wider = { ...pool, locations: ["fsn1", "nbg1", "hel1"], replicas: 7 };
    const after = staticHcloudMembers(cluster, wider, current);
    assert.deepEqual(
      after.map((m) => m.location),
      ["fsn1", "nbg1", "fsn1", "nbg1", "fsn1", "hel1", "hel1"],
    );
    const plans = planHcloudServers(cluster, wider, after);
    assert.notEqual(plans[0].generation, plans[1].generation, "the location is part of the generation");
    const single = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig()] })).pools[0] as HcloudStaticPool;
    assert.deepEqual(
      staticHcloudMembers(cluster, single, [{ nodeId: "0", location: "fsn1" }]).map((m) => m.location),
      ["hel1", "hel1", "hel1"],
    );
  });
});

describe("rollout with spread groups per location", () => {
  it("puts a new server in a group of its own location, never one holding another location's servers", () => {
    const current = Array.from({ length: 10 }, (_, i) => ({
      nodeId: `f${i}`,
      generation: "g",
      ready: true,
      spreadGroup: 0,
      location: "fsn1",
    }));
    const desired = [
      ...current.map((c, i) => ({ nodeId: c.nodeId, generation: "g", placementSlot: i, location: "fsn1" })),
      { nodeId: "n0", generation: "g", placementSlot: 0, location: "nbg1" },
      { nodeId: "f10", generation: "g", placementSlot: 10, location: "fsn1" },
    ];
    const plan = planRollout(desired, current, undefined, { perLocationGroups: true });
    const created = new Map(plan.servers.filter((s) => s.action === "create").map((s) => [s.nodeId, s.spreadGroup]));
    assert.deepEqual([...created].sort(), [
      ["f10", 1],
      ["n0", 0],
    ]);
    // Without per-location groups (one-location pools) group 0 is full, as before.
    const shared = planRollout(desired, current);
    assert.equal(shared.servers.find((s) => s.nodeId === "n0")?.spreadGroup, 1);
  });

  it("never fills a (location, group) past 10 when the current servers respect it", () => {
    fc.assert(
      fc.property(nodeIdsArb, locationsArb, fc.nat({ max: 30 }), (nodeIds, locations, existing) => {
        const assigned = spreadAcrossLocations({ nodeIds, locations, current: [] });
        const slots = new Map<string, number>();
        const desired = nodeIds.map((nodeId) => {
          const location = assigned.get(nodeId)!;
          const slot = slots.get(location) ?? 0;
          slots.set(location, slot + 1);
          return { nodeId, generation: "new", placementSlot: slot, location };
        });
        // The first `existing` members run an old generation in group 0 of their location (at most 10 each).
        const perLocation = new Map<string, number>();
        const current = desired.slice(0, existing).flatMap((d) => {
          const n = perLocation.get(d.location) ?? 0;
          if (n >= 10) return [];
          perLocation.set(d.location, n + 1);
          return [{ nodeId: d.nodeId, generation: "old", ready: true, spreadGroup: 0, location: d.location }];
        });
        const plan = planRollout(desired, current, { maxSurge: 3, maxUnavailable: 0 }, { perLocationGroups: true, networkSize: 1000 });
        const count = new Map<string, number>();
        for (const s of plan.servers) {
          const key = `${assigned.get(s.nodeId)}#${s.spreadGroup}`;
          count.set(key, (count.get(key) ?? 0) + 1);
        }
        for (const [key, n] of count) assert.ok(n <= 10, `${key} holds ${n}`);
      }),
    );
  });
});
