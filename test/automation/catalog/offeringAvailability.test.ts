/**
 * The unavailable periods a failed create starts (offeringAvailability.ts): sold out for the long
 * period, quota, image and full pools for the short one; pool-wide marks only for their own pool.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { OfferingAvailability, PROVIDER_UNAVAILABLE, type UnavailableKind } from "../../../automation/catalog/offeringAvailability";

const KINDS: readonly UnavailableKind[] = ["soldOut", "quota", "image", "poolLimit"];
const SOLD_OUT_MS = 30 * 60_000;
const BACKOFF_MS = 5 * 60_000;

function clocked() {
  const clock = { now: 1_000_000 };
  return { clock, availability: new OfferingAvailability(SOLD_OUT_MS, () => clock.now, BACKOFF_MS) };
}

describe("offering availability after failed creates", () => {
  it("keeps a marked offering unavailable for exactly its kind's period, with the reason", () => {
    fc.assert(
      fc.property(fc.constantFrom(...KINDS), fc.integer({ min: 0, max: 2 * SOLD_OUT_MS }), (kind, elapsed) => {
        const { clock, availability } = clocked();
        availability.markUnavailable("cpx21", "hel1", `failed: ${kind}`, kind);
        clock.now += elapsed;
        const period = kind === "soldOut" ? SOLD_OUT_MS : BACKOFF_MS;
        assert.equal(availability.periodOf(kind), period);
        assert.equal(availability.isAvailable("cpx21", "hel1"), elapsed >= period);
        assert.equal(availability.unavailableReason("cpx21", "hel1"), elapsed >= period ? undefined : `failed: ${kind}`);
        // Other offerings are untouched.
        assert.equal(availability.isAvailable("cpx31", "hel1"), true);
        assert.equal(availability.isAvailable("cpx21", "fsn1"), true);
      }),
    );
  });

  it("makes every offering of a backed-off pool unavailable, in that pool of that cluster only, until the period ends", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<UnavailableKind>("image", "poolLimit"),
        fc.constantFrom("cpx21", "cax11", "cx22"),
        fc.integer({ min: 0, max: 2 * BACKOFF_MS }),
        (kind, serverType, elapsed) => {
          const { clock, availability } = clocked();
          availability.markPoolUnavailable("c1", "burst", "the pool's image cannot be used", kind);
          clock.now += elapsed;
          const over = elapsed >= BACKOFF_MS;
          assert.equal(availability.isAvailable(serverType, "hel1", { clusterId: "c1", pool: "burst" }), over);
          assert.equal(availability.poolUnavailable("c1", "burst")?.kind, over ? undefined : kind);
          assert.equal(availability.isAvailable(serverType, "hel1", { clusterId: "c1", pool: "other" }), true);
          assert.equal(availability.isAvailable(serverType, "hel1", { clusterId: "c2", pool: "burst" }), true);
          assert.equal(availability.isAvailable(serverType, "hel1"), true);
        },
      ),
    );
  });

  it("lets a later mark extend the period, and says why the provider's own report refuses an offering", () => {
    const { clock, availability } = clocked();
    availability.markUnavailable("cpx21", "hel1", "quota", "quota");
    clock.now += BACKOFF_MS - 1;
    availability.markUnavailable("cpx21", "hel1", "quota again", "quota");
    clock.now += BACKOFF_MS - 1;
    assert.equal(availability.unavailableReason("cpx21", "hel1"), "quota again");
    clock.now += 1;
    assert.equal(availability.isAvailable("cpx21", "hel1"), true);
    availability.setProviderUnavailable([{ serverType: "cpx21", location: "hel1" }]);
    assert.equal(availability.unavailableReason("cpx21", "hel1"), PROVIDER_UNAVAILABLE);
  });
});
