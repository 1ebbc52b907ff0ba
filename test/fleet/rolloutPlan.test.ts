import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  type CurrentRolloutServer,
  type DesiredRolloutMember,
  type RolloutPlan,
  type RolloutSettings,
  assertRolloutSettings,
  planRollout,
} from "../../components/fleet/rolloutPlan";

const GROUP = 10;
const NETWORK = 100;

/** A pool of `count` members all running generation `old`, Ready, in their home spread groups. */
function runningPool(count: number, old = "aaaaaa", protectedServers = false): CurrentRolloutServer[] {
  return Array.from({ length: count }, (_, i) => ({
    nodeId: `pool-${i}`,
    generation: old,
    ready: true,
    spreadGroup: Math.floor(i / GROUP),
    ...(protectedServers ? { deleteProtection: true } : {}),
  }));
}

function wantedPool(count: number, generation = "bbbbbb"): DesiredRolloutMember[] {
  return Array.from({ length: count }, (_, i) => ({ nodeId: `pool-${i}`, generation, placementSlot: i }));
}

/**
 * What the next run starts from after `plan` was applied: kept servers as they were (unprotected
 * ones with protection off), created ones Ready when `becomeReady` says so.
 */
function applyPlan(
  plan: RolloutPlan,
  before: readonly CurrentRolloutServer[],
  becomeReady: (nodeId: string) => boolean,
): CurrentRolloutServer[] {
  return plan.servers.map((s) => {
    const existing = before.find((c) => c.nodeId === s.nodeId && c.generation === s.generation);
    if (s.action === "keep" && existing)
      return { ...existing, ready: existing.ready || becomeReady(s.nodeId), ...(s.unprotect ? { deleteProtection: false } : {}) };
    return { nodeId: s.nodeId, generation: s.generation, ready: becomeReady(s.nodeId), spreadGroup: s.spreadGroup };
  });
}

/** Peak servers per spread group during a run: everything present at the start plus the creations. */
function peakGroups(before: readonly CurrentRolloutServer[], plan: RolloutPlan): Map<number, number> {
  const counts = new Map<number, number>();
  for (const s of [...before, ...plan.servers.filter((p) => p.action === "create")])
    counts.set(s.spreadGroup, (counts.get(s.spreadGroup) ?? 0) + 1);
  return counts;
}

function withoutReadyServer(members: readonly DesiredRolloutMember[], servers: readonly { nodeId: string; ready: boolean }[]): number {
  return members.filter((m) => servers.some((s) => s.nodeId === m.nodeId) && !servers.some((s) => s.nodeId === m.nodeId && s.ready)).length;
}

const settingsArb: fc.Arbitrary<RolloutSettings> = fc
  .record({ maxSurge: fc.integer({ min: 0, max: 4 }), maxUnavailable: fc.integer({ min: 0, max: 3 }) })
  .filter((s) => s.maxSurge + s.maxUnavailable > 0);

/** A pool mid-rollout: each member on the old or new generation (or both), Ready or not, some protected. */
const scenarioArb = fc
  .record({
    size: fc.integer({ min: 0, max: 35 }),
    settings: settingsArb,
    outside: fc.integer({ min: 0, max: 70 }),
    states: fc.array(
      fc.record({
        shape: fc.constantFrom("old", "new", "both", "none"),
        oldReady: fc.boolean(),
        newReady: fc.boolean(),
        protect: fc.boolean(),
      }),
      {
        minLength: 35,
        maxLength: 35,
      },
    ),
  })
  .map(({ size, settings, outside, states }) => {
    const desired = wantedPool(size);
    const current: CurrentRolloutServer[] = [];
    desired.forEach((m, i) => {
      const st = states[i];
      const group = Math.floor(m.placementSlot / GROUP);
      if (st.shape === "old" || st.shape === "both")
        current.push({ nodeId: m.nodeId, generation: "aaaaaa", ready: st.oldReady, spreadGroup: group, deleteProtection: st.protect });
      if (st.shape === "new" || st.shape === "both")
        current.push({ nodeId: m.nodeId, generation: m.generation, ready: st.newReady, spreadGroup: group });
    });
    // Respect the limits at the start: a real pool never begins above them.
    const perGroup = new Map<number, number>();
    const fitting = current.filter((s) => {
      const n = (perGroup.get(s.spreadGroup) ?? 0) + 1;
      if (n > GROUP) return false;
      perGroup.set(s.spreadGroup, n);
      return true;
    });
    return { desired, current: fitting, settings, outside: Math.min(outside, NETWORK - fitting.length) };
  });

describe("rollout planner", () => {
  it("rolls a 12-member pool one surge at a time, removing each old server only after its replacement is Ready", () => {
    let current = runningPool(12);
    const desired = wantedPool(12);
    const first = planRollout(desired, current);
    assert.deepEqual(first.replacing, ["pool-0"]);
    assert.deepEqual(
      first.servers.filter((s) => s.action === "create").map((s) => [s.nodeId, s.generation, s.spreadGroup]),
      [["pool-0", "bbbbbb", 1]],
      "group 0 is full, so the surge server goes to the group with room",
    );
    assert.equal(first.removals.length, 0);
    assert.equal(first.remaining, 12);

    // The replacement is not Ready yet: nothing more happens.
    current = applyPlan(first, current, () => false);
    const waiting = planRollout(desired, current);
    assert.deepEqual(
      waiting.servers,
      first.servers.map((s) => ({ ...s, action: "keep" })),
    );
    assert.equal(waiting.removals.length, 0);
    assert.match(String(waiting.waiting), /maxSurge 1 reached/);

    // Ready: the old server goes (drained on deletion); it still exists until the end of the run, so
    // the next member surges in the run after.
    current = current.map((s) => ({ ...s, ready: true }));
    const removing = planRollout(desired, current);
    assert.deepEqual(removing.removals, [{ nodeId: "pool-0", generation: "aaaaaa", reason: "replaced" }]);
    assert.deepEqual(removing.replacing, []);
    assert.equal(removing.remaining, 11);
    const next = planRollout(
      desired,
      applyPlan(removing, current, () => true),
    );
    assert.deepEqual(next.replacing, ["pool-1"]);
    assert.deepEqual(
      next.servers.find((s) => s.action === "create"),
      { nodeId: "pool-1", generation: "bbbbbb", spreadGroup: 0, action: "create", unprotect: false },
      "pool-0 left group 0: room again",
    );
  });

  it("lifts delete protection of exactly the server to remove, one run before removing it", () => {
    const desired = wantedPool(3);
    let current = runningPool(3, "aaaaaa", true);
    current = applyPlan(planRollout(desired, current), current, () => true);
    const unprotect = planRollout(desired, current);
    assert.deepEqual(
      unprotect.servers.filter((s) => s.unprotect).map((s) => [s.nodeId, s.generation]),
      [["pool-0", "aaaaaa"]],
    );
    assert.equal(unprotect.removals.length, 0);
    current = applyPlan(unprotect, current, () => true);
    assert.deepEqual(planRollout(desired, current).removals, [{ nodeId: "pool-0", generation: "aaaaaa", reason: "replaced" }]);
  });

  it("with maxSurge 0 removes first (within maxUnavailable) and creates in the next run", () => {
    const desired = wantedPool(4);
    const settings = { maxSurge: 0, maxUnavailable: 2 };
    const current = runningPool(4);
    const plan = planRollout(desired, current, settings);
    assert.deepEqual(
      plan.removals.map((r) => [r.nodeId, r.reason]),
      [
        ["pool-0", "unavailable"],
        ["pool-1", "unavailable"],
      ],
    );
    assert.equal(plan.servers.filter((s) => s.action === "create").length, 0);
    const next = planRollout(
      desired,
      applyPlan(plan, current, () => true),
      settings,
    );
    assert.deepEqual(
      next.servers.filter((s) => s.action === "create").map((s) => s.nodeId),
      ["pool-0", "pool-1"],
    );
  });

  it("waits at the network limit instead of exceeding it", () => {
    const plan = planRollout(wantedPool(5), runningPool(5), { maxSurge: 1, maxUnavailable: 0 }, { serversOutsidePool: 95 });
    assert.equal(plan.servers.filter((s) => s.action === "create").length, 0);
    assert.match(String(plan.waiting), /the network holds 100 servers/);
  });

  it("refuses settings that could never replace anything, naming the field", () => {
    assert.throws(() => assertRolloutSettings({ maxSurge: 0, maxUnavailable: 0 }), /rollout: maxSurge and maxUnavailable cannot both be 0/);
    assert.throws(
      () => assertRolloutSettings({ maxSurge: -1, maxUnavailable: 1 }),
      /rollout\.maxSurge must be a whole number of 0 or more/,
    );
    assert.throws(
      () => assertRolloutSettings({ maxSurge: 1, maxUnavailable: 0.5 }, "pools[0].rollout"),
      /pools\[0\]\.rollout\.maxUnavailable/,
    );
  });

  it("never creates more than maxSurge servers above the desired count", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, settings, outside }) => {
        const plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
        const replacementCreates = plan.servers.filter((s) => s.action === "create" && current.some((c) => c.nodeId === s.nodeId));
        const peak =
          current.filter((c) => desired.some((m) => m.nodeId === c.nodeId)).length +
          plan.servers.filter((s) => s.action === "create").length;
        if (replacementCreates.length > 0)
          assert.ok(peak <= desired.length + settings.maxSurge, `peak ${peak} of ${desired.length} + ${settings.maxSurge}`);
      }),
    );
  });

  it("never leaves more than maxUnavailable members without a Ready server (unless they were already)", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, settings, outside }) => {
        const plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
        const after = plan.servers.map((s) => ({
          nodeId: s.nodeId,
          ready: s.action === "keep" && current.some((c) => c.nodeId === s.nodeId && c.generation === s.generation && c.ready),
        }));
        const before = withoutReadyServer(desired, current);
        const lost = desired.filter(
          (m) => current.some((c) => c.nodeId === m.nodeId && c.ready) && !after.some((s) => s.nodeId === m.nodeId && s.ready),
        );
        assert.ok(before + lost.length <= Math.max(settings.maxUnavailable, before), `lost ${lost.length} with ${before} already down`);
        // An old server that was Ready goes only when its member keeps a Ready server, or within maxUnavailable.
        assert.ok(lost.length <= settings.maxUnavailable);
      }),
    );
  });

  it("never pushes a spread group above 10 or the network above 100 servers", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, settings, outside }) => {
        const plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
        const created = plan.servers.filter((s) => s.action === "create");
        const peak = peakGroups(current, plan);
        for (const s of created)
          assert.ok((peak.get(s.spreadGroup) ?? 0) <= GROUP, `group ${s.spreadGroup} holds ${peak.get(s.spreadGroup)}`);
        if (created.length > 0) assert.ok(outside + current.length + created.length <= NETWORK);
        // A kept server never changes group.
        for (const s of plan.servers.filter((p) => p.action === "keep")) {
          assert.equal(s.spreadGroup, current.find((c) => c.nodeId === s.nodeId && c.generation === s.generation)?.spreadGroup);
        }
      }),
    );
  });

  it("is idempotent and never undoes its own step: a server it created is kept on the next run", () => {
    fc.assert(
      fc.property(scenarioArb, fc.boolean(), ({ desired, current, settings, outside }, ready) => {
        const plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
        assert.deepEqual(planRollout([...desired].reverse(), [...current].reverse(), settings, { serversOutsidePool: outside }), plan);
        const next = planRollout(
          desired,
          applyPlan(plan, current, () => ready),
          settings,
          { serversOutsidePool: outside },
        );
        for (const created of plan.servers.filter((s) => s.action === "create")) {
          assert.ok(
            next.servers.some((s) => s.nodeId === created.nodeId && s.generation === created.generation),
            `${created.nodeId}-${created.generation} survives the next run`,
          );
        }
      }),
    );
  });

  it("replaces every member eventually across repeated runs, whatever the settings and pool size", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60 }),
        settingsArb,
        fc.boolean(),
        fc.integer({ min: 0, max: 30 }),
        (size, settings, protect, outside) => {
          const desired = wantedPool(size);
          let current = runningPool(size, "aaaaaa", protect);
          let plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
          let runs = 1;
          // Every created server becomes Ready before the next run.
          while (plan.remaining > 0 || plan.removals.length > 0 || plan.servers.some((s) => s.unprotect)) {
            current = applyPlan(plan, current, () => true);
            plan = planRollout(desired, current, settings, { serversOutsidePool: outside });
            assert.ok(++runs <= 4 * size + 4, `still ${plan.remaining} to go after ${runs} runs`);
          }
          const finalServers = applyPlan(plan, current, () => true);
          assert.deepEqual(finalServers.map((s) => [s.nodeId, s.generation]).sort(), desired.map((m) => [m.nodeId, m.generation]).sort());
        },
      ),
    );
  });
});
