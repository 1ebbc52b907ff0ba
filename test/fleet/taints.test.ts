/** Taint lists by (key, effect): merging never repeats a pair, and the later list's value wins. */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { TAINT_EFFECTS, parseFleetSpec, type Taint } from "../../components/fleet/fleetSpec";
import { mergeTaints, repeatedTaintPairs, taintPair } from "../../components/fleet/taints";
import { configValues } from "../../automation/stackConfigFile";
import { exampleConfig } from "../support/apiHarness";

const taint: fc.Arbitrary<Taint> = fc.record(
  { key: fc.constantFrom("a", "b", "example.com/c"), value: fc.constantFrom("x", "y"), effect: fc.constantFrom(...TAINT_EFFECTS) },
  { requiredKeys: ["key", "effect"] },
);

describe("taints by (key, effect)", () => {
  it("merges without repeating a pair, keeping every pair of both lists, the overriding list's entry winning", () => {
    fc.assert(
      fc.property(fc.array(taint), fc.array(taint), (base, overrides) => {
        const merged = mergeTaints(base, overrides);
        assert.deepEqual(repeatedTaintPairs(merged), []);
        assert.deepEqual(new Set(merged.map(taintPair)), new Set([...base, ...overrides].map(taintPair)));
        for (const t of merged) {
          const last = [...base, ...overrides].filter((o) => taintPair(o) === taintPair(t)).at(-1);
          assert.deepEqual(t, last);
        }
      }),
    );
  });

  it("keeps the base list's order when nothing repeats", () => {
    const base: Taint[] = [
      { key: "b", effect: "NoSchedule" },
      { key: "a", value: "x", effect: "NoExecute" },
    ];
    assert.deepEqual(mergeTaints(base, []), base);
    assert.deepEqual(mergeTaints(base, [{ key: "b", value: "y", effect: "NoSchedule" }]), [
      { key: "b", value: "y", effect: "NoSchedule" },
      base[1],
    ]);
  });

  it("refuses a pool whose taints repeat a (key, effect) pair, naming the taint", () => {
    const values = configValues(exampleConfig());
    const pools = structuredClone(values["nodefleet:pools"]) as Array<Record<string, unknown>>;
    pools[0]!.taints = [
      { key: "dedicated", value: "a", effect: "NoSchedule" },
      { key: "dedicated", value: "b", effect: "NoSchedule" },
    ];
    assert.throws(
      () => parseFleetSpec({ ...values, "nodefleet:pools": pools }),
      /pools\[0\]\.taints\[1\]: taint dedicated:NoSchedule repeats/,
    );
  });
});
