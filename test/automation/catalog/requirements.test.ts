/** Requirement evaluation: Gte/Lte against Gt/Lt, and minValues counted over the offerings that fit. */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { requirementAllows, unmetMinValues } from "../../../automation/catalog/requirements";

describe("node selector requirements", () => {
  it("evaluates Gte N as Gt N-1 and Lte N as Lt N+1 on integer labels (as Karpenter rewrites them)", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: -1000, max: 1000 }), (label, bound) => {
        const labels = { n: String(label) };
        const allows = (operator: "Gt" | "Lt" | "Gte" | "Lte", value: number) =>
          requirementAllows({ key: "n", operator, values: [String(value)] }, labels);
        assert.equal(allows("Gte", bound), allows("Gt", bound - 1));
        assert.equal(allows("Lte", bound), allows("Lt", bound + 1));
        assert.equal(allows("Gte", bound), label >= bound);
      }),
    );
  });

  it("reports minValues the fitting offerings do not reach, and ignores keys no offering defines", () => {
    const offerings = [
      { type: "a", arch: "amd64" },
      { type: "b", arch: "amd64" },
    ];
    assert.deepEqual(unmetMinValues([{ key: "type", operator: "Exists", minValues: 2 }], offerings), []);
    assert.deepEqual(unmetMinValues([{ key: "arch", operator: "Exists", minValues: 2 }], offerings), [
      { key: "arch", minValues: 2, found: 1 },
    ]);
    assert.deepEqual(unmetMinValues([{ key: "example.com/team", operator: "In", values: ["x"], minValues: 2 }], offerings), []);
  });
});
