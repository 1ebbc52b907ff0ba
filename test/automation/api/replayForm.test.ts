/** The canonical form a replayed create is recognised by (docs/design.md §5.5: requirements and values sorted, labels and taints as sets). */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { createRequestHash, isReplayOf } from "../../../automation/api/replayForm";
import type { CreateNodeBody } from "../../../automation/api/schemas";

const requirement = fc.record(
  {
    key: fc.constantFrom("node.kubernetes.io/instance-type", "kubernetes.io/arch", "example.com/team"),
    operator: fc.constantFrom("In" as const, "NotIn" as const),
    values: fc.uniqueArray(fc.constantFrom("a", "b", "c", "d"), { minLength: 1 }),
    minValues: fc.integer({ min: 1, max: 3 }),
  },
  { requiredKeys: ["key", "operator", "values"] },
);
const taint = fc.record({ key: fc.constantFrom("t1", "t2", "t3"), effect: fc.constantFrom("NoSchedule" as const, "NoExecute" as const) });
const labels = fc.dictionary(fc.constantFrom("l1", "example.com/l2", "l3"), fc.constantFrom("v1", "v2"));
const body: fc.Arbitrary<CreateNodeBody> = fc.record({
  uniqueID: fc.constant("claim.a"),
  pool: fc.constant("hel1-burst"),
  requirements: fc.uniqueArray(requirement, { selector: (r) => r.key, maxLength: 3 }),
  labels,
  taints: fc.uniqueArray(taint, { selector: (t) => `${t.key}:${t.effect}`, maxLength: 3 }),
});

/** The same body with lists and values shuffled, labels re-ordered and extra labels added. */
const reshuffled = (b: CreateNodeBody, extra: Record<string, string>) =>
  fc
    .tuple(
      fc.shuffledSubarray(b.requirements!, { minLength: b.requirements!.length }),
      fc.shuffledSubarray(b.taints!, { minLength: b.taints!.length }),
    )
    .chain(([requirements, taints]) =>
      fc
        .tuple(
          ...requirements.map((r) => fc.shuffledSubarray(r.values!, { minLength: r.values!.length }).map((values) => ({ ...r, values }))),
        )
        .map((shuffled) => ({
          ...b,
          requirements: shuffled,
          taints,
          labels: Object.fromEntries(Object.entries({ ...extra, ...b.labels }).reverse()),
        })),
    );

describe("replay form of a create", () => {
  it("recognises a replay with requirements, values and taints in any order and labels added", () => {
    fc.assert(
      fc.property(
        body.chain((b) =>
          fc.tuple(
            fc.constant(b),
            fc.dictionary(fc.constantFrom("added", "karpenter.sh/nodepool"), fc.constant("x")).chain((extra) => reshuffled(b, extra)),
          ),
        ),
        ([first, again]) => {
          assert.ok(isReplayOf(first, again));
          assert.equal(createRequestHash(first), createRequestHash(again));
        },
      ),
    );
  });

  it("is not a replay when a label of the first create changed or went, or a requirement differs", () => {
    fc.assert(
      fc.property(
        body.filter((b) => Object.keys(b.labels!).length > 0),
        (first) => {
          const [key, value] = Object.entries(first.labels!)[0]!;
          assert.equal(isReplayOf(first, { ...first, labels: { ...first.labels, [key]: `${value}x` } }), false);
          const { [key]: _dropped, ...rest } = first.labels!;
          assert.equal(isReplayOf(first, { ...first, labels: rest }), false);
          assert.equal(isReplayOf(first, { ...first, requirements: [...first.requirements!, { key: "new", operator: "Exists" }] }), false);
          assert.equal(isReplayOf(first, { ...first, instanceType: "cpx31" }), false);
        },
      ),
    );
  });

  it("treats empty requirement and taint lists as absent ones", () => {
    const bare: CreateNodeBody = { uniqueID: "claim", pool: "p" };
    assert.ok(isReplayOf(bare, { ...bare, requirements: [], taints: [] }));
  });
});
