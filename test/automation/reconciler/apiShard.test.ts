/**
 * Shard placement (reconciler/apiShard.ts) as properties: admitted the way the API admits (the
 * smallest free slot, with members leaving at random), a spread group never spans two shards, no
 * new shard holds more than its size of one pool, and claims from before shards stay in shard 0.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import fc from "fast-check";
import {
  DEFAULT_MEMBERS_PER_SHARD,
  DEFAULT_SHARD,
  SPREAD_GROUP_SIZE,
  membersPerShard,
  shardForNewMember,
  shardOfClaim,
} from "../../../automation/reconciler/apiShard";
import { apiEngineStateOf, apiStackName } from "../../../automation/reconciler/apiStack";
import { freeSlot } from "../../../automation/api/clusterService";
import type { MemberSnapshot } from "../../../automation/store/claimSnapshot";
import { tempDataDir } from "../../support/apiHarness";

/** Admits and removes members of one pool in order, as the API does; returns the shard of every slot admitted. */
function simulate(steps: ReadonlyArray<{ admit: boolean; pick: number }>, size: number): Array<{ slot: number; shard: string }> {
  const live = new Map<number, string>();
  const admitted: Array<{ slot: number; shard: string }> = [];
  for (const step of steps) {
    if (step.admit || live.size === 0) {
      const slot = freeSlot([...live.keys()]);
      const shard = shardForNewMember({ pool: "burst", placementSlot: slot, slotShards: live, membersPerShard: size });
      live.set(slot, shard);
      admitted.push({ slot, shard });
    } else {
      const slots = [...live.keys()];
      live.delete(slots[step.pick % slots.length]!);
    }
    // Invariant at every moment: a live spread group sits in one shard.
    const groups = new Map<number, Set<string>>();
    for (const [slot, shard] of live) {
      const group = Math.floor(slot / SPREAD_GROUP_SIZE);
      groups.set(group, (groups.get(group) ?? new Set()).add(shard));
    }
    for (const [group, shards] of groups) assert.equal(shards.size, 1, `spread group ${group} spans ${[...shards].join(", ")}`);
  }
  return admitted;
}

const steps = fc.array(fc.record({ admit: fc.boolean(), pick: fc.nat() }), { maxLength: 300 });
const sizes = fc.integer({ min: 1, max: 8 }).map((n) => n * SPREAD_GROUP_SIZE);

describe("API stack shards (placement of new members)", () => {
  it("never splits a live spread group between shards", () => {
    fc.assert(fc.property(steps, sizes, (s, size) => void simulate(s, size)));
  });

  it("puts a fresh block of slots in its own shard: block 0 in shard 0, block b in <pool>-b", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 250 }), sizes, (count, size) => {
        const admitted = simulate(
          Array.from({ length: count }, () => ({ admit: true, pick: 0 })),
          size,
        );
        for (const { slot, shard } of admitted) {
          const block = Math.floor(slot / size);
          assert.equal(shard, block === 0 ? DEFAULT_SHARD : `burst-${block}`);
        }
        const perShard = new Map<string, number>();
        for (const { shard } of admitted) perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
        assert.ok(Math.max(...perShard.values()) <= size);
      }),
    );
  });

  it("keeps a new member beside the members of its spread group, whatever shard they are in", () => {
    const live = new Map([[55, DEFAULT_SHARD]]);
    assert.equal(shardForNewMember({ pool: "burst", placementSlot: 57, slotShards: live, membersPerShard: 50 }), DEFAULT_SHARD);
    assert.equal(shardForNewMember({ pool: "burst", placementSlot: 60, slotShards: live, membersPerShard: 50 }), "burst-1");
  });

  it("reads claims admitted before shards as shard 0", () => {
    const snapshot = { placementSlot: 70 } as unknown as MemberSnapshot;
    assert.equal(shardOfClaim({ snapshot }), DEFAULT_SHARD);
    assert.equal(shardOfClaim({ snapshot: { ...snapshot, shard: "burst-1" } }), "burst-1");
  });

  it("names shard 0 as the stack before shards, and the others after it", () => {
    assert.equal(apiStackName("prod"), "prod-api");
    assert.equal(apiStackName("prod", DEFAULT_SHARD), "prod-api");
    assert.equal(apiStackName("prod", "burst-2"), "prod-api-burst-2");
  });

  it("takes NODEFLEET_SHARD_SIZE as a positive multiple of the spread group size, naming the rule otherwise", () => {
    assert.equal(membersPerShard(undefined), DEFAULT_MEMBERS_PER_SHARD);
    assert.equal(membersPerShard("100"), 100);
    for (const bad of ["0", "-10", "25", "ten", "10.5"])
      assert.throws(() => membersPerShard(bad), /NODEFLEET_SHARD_SIZE: must be a positive multiple of 10/);
  });

  it("finds the engine state of every shard of the cluster for the lost-store check, and no other cluster's", () => {
    const dataDir = tempDataDir("nodefleet-shards-");
    const checkpoints = path.join(dataDir, "state", ".pulumi", "stacks", "nodefleet-api");
    fs.mkdirSync(checkpoints, { recursive: true });
    fs.writeFileSync(path.join(checkpoints, "prod-api-burst-1.json"), "{}");
    fs.writeFileSync(path.join(checkpoints, "staging-api-burst-1.json"), "{}");
    fs.mkdirSync(path.join(dataDir, "workspaces", "prod-api-burst-2"), { recursive: true });
    const found = apiEngineStateOf(dataDir, "prod").map((file) => path.relative(dataDir, file));
    assert.deepEqual(found.sort(), [
      path.join("state", ".pulumi", "stacks", "nodefleet-api", "prod-api-burst-1.json"),
      path.join("workspaces", "prod-api-burst-2"),
    ]);
    assert.deepEqual(apiEngineStateOf(dataDir, "other"), []);
  });
});
