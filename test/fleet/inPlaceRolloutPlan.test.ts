import { strict as assert } from "node:assert";
import fc from "fast-check";
import {
  type CurrentInPlaceMember,
  DEFAULT_IN_PLACE_MAX_UNAVAILABLE,
  type DesiredRolloutMember,
  type InPlaceRolloutPlan,
  planInPlaceRollout,
} from "../../components/fleet/rolloutPlan";
import { inPlaceRolloutGeneration, scriptIgnoredUnlessRunning } from "../../components/fleet/inPlaceMembers";
import { generationHash } from "../../components/fleet/generationSuffix";

const wanted = (count: number, generation = "bbbbbb"): DesiredRolloutMember[] =>
  Array.from({ length: count }, (_, i) => ({ nodeId: `metal-${i}`, generation, placementSlot: i }));
const installed = (count: number, generation = "aaaaaa", ready = true): CurrentInPlaceMember[] =>
  Array.from({ length: count }, (_, i) => ({ nodeId: `metal-${i}`, generation, ready }));

/** The next run's members once `plan` ran: updated and installed members at their new generation, Ready when `becomeReady` says so. */
function applyPlan(
  plan: InPlaceRolloutPlan,
  before: readonly CurrentInPlaceMember[],
  becomeReady: (nodeId: string) => boolean,
): CurrentInPlaceMember[] {
  return plan.members.map((s) => {
    const previous = before.find((c) => c.nodeId === s.nodeId);
    if ((s.action === "keep" || s.action === "retain") && previous) return { ...previous, ready: previous.ready || becomeReady(s.nodeId) };
    return { nodeId: s.nodeId, generation: s.generation, ready: becomeReady(s.nodeId) };
  });
}

/** A pool: wanted members (some new), what runs now (some outdated, some not Ready, some scaled down). */
const scenarioArb = fc
  .record({
    size: fc.integer({ min: 0, max: 14 }),
    maxUnavailable: fc.integer({ min: 1, max: 4 }),
    existing: fc.array(fc.record({ present: fc.boolean(), outdated: fc.boolean(), ready: fc.boolean() }), { minLength: 16, maxLength: 16 }),
    extra: fc.integer({ min: 0, max: 2 }),
  })
  .map(({ size, maxUnavailable, existing, extra }) => {
    const desired = wanted(size);
    const current: CurrentInPlaceMember[] = [];
    for (let i = 0; i < size + extra; i++) {
      const e = existing[i];
      if (i < size && !e.present) continue;
      current.push({ nodeId: `metal-${i}`, generation: e.outdated || i >= size ? "aaaaaa" : "bbbbbb", ready: e.ready });
    }
    return { desired, current, maxUnavailable };
  });

describe("planInPlaceRollout (bare metal: no surge, drain then reinstall or re-join)", () => {
  it("updates one member of six per run by default, the others keep their previous generation", () => {
    let current = installed(6);
    const updatedPerRun: string[][] = [];
    for (let run = 0; run < 10 && current.some((c) => c.generation !== "bbbbbb"); run++) {
      const plan = planInPlaceRollout(wanted(6), current);
      updatedPerRun.push([...plan.updating]);
      assert.equal(plan.members.filter((m) => m.action === "retain").length, plan.remaining);
      current = applyPlan(plan, current, () => true);
    }
    assert.equal(DEFAULT_IN_PLACE_MAX_UNAVAILABLE, 1);
    assert.deepEqual(updatedPerRun, [["metal-0"], ["metal-1"], ["metal-2"], ["metal-3"], ["metal-4"], ["metal-5"]]);
    const first = planInPlaceRollout(wanted(6), installed(6));
    assert.deepEqual(
      first.members.map((m) => [m.action, m.generation]),
      [["update", "bbbbbb"], ...Array(5).fill(["retain", "aaaaaa"])],
    );
    assert.equal(first.remaining, 5);
    assert.equal(first.waiting, "maxUnavailable 1 reached");
  });

  it("waits while the member updated last run is not Ready yet, and updates broken members first at no cost", () => {
    const current = [{ nodeId: "metal-0", generation: "bbbbbb", ready: false }, ...installed(6).slice(1)];
    const waiting = planInPlaceRollout(wanted(6), current);
    assert.deepEqual(waiting.updating, [], "metal-0 is not Ready: nothing else may go down");
    assert.equal(waiting.remaining, 5);
    const broken = installed(6).map((c) => (c.nodeId === "metal-4" ? { ...c, ready: false } : c));
    assert.deepEqual(planInPlaceRollout(wanted(6), broken, 1).updating, ["metal-4"], "the broken member goes without using maxUnavailable");
    assert.deepEqual(planInPlaceRollout(wanted(6), installed(6), 2).updating, ["metal-0", "metal-1"]);
  });

  it("installs new members, reports members that left, and refuses a member recorded twice or maxUnavailable 0", () => {
    const plan = planInPlaceRollout(wanted(2), [...installed(1, "bbbbbb"), { nodeId: "metal-7", generation: "aaaaaa", ready: true }]);
    assert.deepEqual(
      plan.members.map((m) => m.action),
      ["keep", "install"],
    );
    assert.deepEqual(plan.removals, [{ nodeId: "metal-7", generation: "aaaaaa" }]);
    assert.equal(plan.waiting, undefined);
    assert.throws(() => planInPlaceRollout(wanted(1), [...installed(1), ...installed(1)]), /metal-0 is recorded twice/);
    assert.throws(() => planInPlaceRollout(wanted(1), [], 0), /maxSurge and maxUnavailable cannot both be 0/);
  });

  it("never leaves more than maxUnavailable members without a Ready Node (unless they were already)", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, maxUnavailable }) => {
        const plan = planInPlaceRollout(desired, current, maxUnavailable);
        const wantedIds = new Set(desired.map((m) => m.nodeId));
        const notReadyBefore = current.filter((c) => wantedIds.has(c.nodeId) && !c.ready).length;
        const updatedReady = plan.updating.filter((id) => current.find((c) => c.nodeId === id)?.ready).length;
        assert.ok(notReadyBefore + updatedReady <= Math.max(maxUnavailable, notReadyBefore));
        if (updatedReady > 0) assert.ok(notReadyBefore + updatedReady <= maxUnavailable);
      }),
    );
  });

  it("declares every wanted member once, at its wanted or its previous generation, with the action that says which", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, maxUnavailable }) => {
        const plan = planInPlaceRollout(desired, current, maxUnavailable);
        assert.deepEqual(
          plan.members.map((m) => m.nodeId),
          desired.map((m) => m.nodeId),
        );
        for (const step of plan.members) {
          const previous = current.find((c) => c.nodeId === step.nodeId);
          const want = desired.find((m) => m.nodeId === step.nodeId)!.generation;
          const expected =
            previous === undefined
              ? "install"
              : previous.generation === want
                ? "keep"
                : plan.updating.includes(step.nodeId)
                  ? "update"
                  : "retain";
          assert.equal(step.action, expected);
          assert.equal(step.generation, step.action === "retain" ? previous!.generation : want);
        }
        assert.deepEqual(
          plan.removals.map((r) => r.nodeId),
          current
            .filter((c) => !desired.some((m) => m.nodeId === c.nodeId))
            .map((c) => c.nodeId)
            .sort(),
        );
        assert.equal(plan.remaining, plan.members.filter((m) => m.action === "retain").length);
        assert.equal(plan.waiting !== undefined, plan.remaining > 0);
        // Broken members never wait behind a Ready one.
        const retainedBroken = plan.members.filter((m) => m.action === "retain" && !current.find((c) => c.nodeId === m.nodeId)!.ready);
        assert.deepEqual(retainedBroken, []);
      }),
    );
  });

  it("is deterministic and order-independent, and a finished pool plans nothing", () => {
    fc.assert(
      fc.property(scenarioArb, ({ desired, current, maxUnavailable }) => {
        const plan = planInPlaceRollout(desired, current, maxUnavailable);
        assert.deepEqual(planInPlaceRollout([...desired].reverse(), [...current].reverse(), maxUnavailable), plan);
        const done = desired.map((m) => ({ nodeId: m.nodeId, generation: m.generation, ready: true }));
        const finished = planInPlaceRollout(desired, done, maxUnavailable);
        assert.deepEqual([finished.updating, finished.remaining, finished.members.every((m) => m.action === "keep")], [[], 0, true]);
      }),
    );
  });

  it("updates every member eventually across repeated runs, and never undoes its own step", () => {
    fc.assert(
      fc.property(
        scenarioArb,
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        ({ desired, current, maxUnavailable }, slowJoins) => {
          let state = current;
          // A member's Node may take a run longer to become Ready; after that every Node comes up.
          for (let run = 0; run < desired.length + 3; run++) {
            const plan = planInPlaceRollout(desired, state, maxUnavailable);
            const next = applyPlan(plan, state, (id) => run > 0 || !slowJoins[Number(id.split("-")[1]) % slowJoins.length]);
            for (const c of state) {
              const after = next.find((n) => n.nodeId === c.nodeId);
              const want = desired.find((m) => m.nodeId === c.nodeId)?.generation;
              if (after && c.generation === want) assert.equal(after.generation, want, `${c.nodeId} went back`);
            }
            state = next;
          }
          assert.deepEqual(
            state.map((s) => s.generation),
            desired.map((m) => m.generation),
          );
        },
      ),
    );
  });
});

describe("in-place rollout generation (fleet/inPlaceMembers.ts)", () => {
  const member = fc.record({ generation: fc.stringMatching(/^[a-z0-9]{6}$/), joinInputs: fc.stringMatching(/^[0-9a-f]{64}$/) });

  it("without a kubelet config is the hash recorded before it counted; a config or a new one moves it", () => {
    fc.assert(
      fc.property(member, fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9a-f]{64}$/), (m, config, other) => {
        assert.equal(inPlaceRolloutGeneration(m), generationHash({ generation: m.generation, joinInputs: m.joinInputs }));
        assert.notEqual(inPlaceRolloutGeneration({ ...m, kubeletConfigHash: config }), inPlaceRolloutGeneration(m));
        if (config !== other)
          assert.notEqual(
            inPlaceRolloutGeneration({ ...m, kubeletConfigHash: config }),
            inPlaceRolloutGeneration({ ...m, kubeletConfigHash: other }),
          );
      }),
    );
  });

  it("keeps the script of a command from the state only for members declared at the generation they run", () => {
    assert.deepEqual(
      (["install", "keep", "update", "retain"] as const).map((action) => scriptIgnoredUnlessRunning(action)),
      [{}, { ignoreChanges: ["stdin"] }, {}, { ignoreChanges: ["stdin"] }],
    );
  });
});
