import { strict as assert } from "node:assert";
import { datacenterJson, serverTypeName, soldOutIn } from "../../../automation/local/fakeHcloud/fakeHcloudCatalog";

describe("fake Hetzner API: sold out per location (NODEFLEET_SIM_OUT_OF_STOCK type@location)", () => {
  it("takes a type sold out everywhere or in one location only", () => {
    const soldOut = new Set(["cx52", "cpx21@hel1"]);
    assert.equal(soldOutIn(soldOut, "cx52", "fsn1"), true);
    assert.equal(soldOutIn(soldOut, "cpx21", "hel1"), true);
    assert.equal(soldOutIn(soldOut, "cpx21", "fsn1"), false);
    assert.equal(soldOutIn(soldOut, "cpx31", "hel1"), false);
  });

  it("leaves a type out of one datacenter's available types, not the other's", () => {
    const soldOut = new Set(["cpx21@hel1"]);
    const available = (location: string) => datacenterJson(location, soldOut)!.server_types as { available: number[]; supported: number[] };
    const hel1 = available("hel1");
    const fsn1 = available("fsn1");
    const missing = hel1.supported.filter((s) => !hel1.available.includes(s));
    assert.deepEqual(
      missing.map((s) => serverTypeName(s)),
      ["cpx21"],
      "exactly cpx21 is sold out in hel1",
    );
    assert.ok(fsn1.available.includes(missing[0]!), "and still available in fsn1");
  });
});
