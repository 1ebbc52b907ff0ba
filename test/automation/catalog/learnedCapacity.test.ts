/**
 * Learned node capacity (automation/catalog/learnedCapacity.ts): quantities read as the kubelet
 * writes them, never rounded up; the smallest report wins whatever the order; and instance types
 * switching from the estimate to what Nodes of their kind reported, and back when the kubelet's
 * settings change.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import type { NodeResources } from "../../../components/bootstrap/kubeletReservations";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { estimatedResources, formatResources, poolInstanceTypes } from "../../../automation/catalog/instanceTypes";
import {
  kubeletFingerprint,
  lowered,
  nodeResourcesOf,
  offeredResources,
  parseQuantity,
  reportedCapacity,
  type CapacityKey,
  type LearnedCapacity,
} from "../../../automation/catalog/learnedCapacity";
import { findServerType, shippedCatalog } from "../../../automation/catalog/serverTypes";

const MULTIPLIERS: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 2 ** 20, Gi: 2 ** 30 };

const resources = fc
  .record({
    cpuMillis: fc.integer({ min: 1, max: 512_000 }),
    memoryMiB: fc.integer({ min: 1, max: 2 ** 22 }),
    pods: fc.integer({ min: 0, max: 1000 }),
    ephemeralStorageMiB: fc.integer({ min: 0, max: 2 ** 24 }),
  })
  // Plain objects, as the kubelet's JSON gives them (fast-check's records have no prototype).
  .map((r) => ({ ...r }));

/** A Node report that makes sense: allocatable at most capacity, field by field. */
const report: fc.Arbitrary<LearnedCapacity> = fc.tuple(resources, resources).map(([capacity, less]) => ({
  capacity,
  allocatable: {
    cpuMillis: Math.max(1, capacity.cpuMillis - (less.cpuMillis % capacity.cpuMillis)),
    memoryMiB: Math.max(1, capacity.memoryMiB - (less.memoryMiB % capacity.memoryMiB)),
    pods: capacity.pods - (capacity.pods === 0 ? 0 : less.pods % (capacity.pods + 1)),
    ephemeralStorageMiB: capacity.ephemeralStorageMiB - (less.ephemeralStorageMiB % (capacity.ephemeralStorageMiB + 1)),
  },
}));

const FIELDS = ["cpuMillis", "memoryMiB", "pods", "ephemeralStorageMiB"] as const;
const atMost = (a: NodeResources, b: NodeResources) => FIELDS.every((f) => a[f] <= b[f]);

describe("learned node capacity", () => {
  it("reads quantities in every suffix the kubelet writes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom(...Object.keys(MULTIPLIERS)), (n, suffix) => {
        assert.equal(parseQuantity(`${n}${suffix}`), n * MULTIPLIERS[suffix]!);
      }),
    );
    assert.equal(parseQuantity("1930m"), 1.93);
    assert.equal(parseQuantity("1.5"), 1.5);
    assert.equal(parseQuantity("12e3"), 12_000);
    for (const bad of ["", "-1", "1Xi", "Mi", "1 Mi", "0x10", 5, undefined]) assert.equal(parseQuantity(bad), undefined, String(bad));
  });

  it("never rounds a reported value up (a Node's Ki memory and byte storage, to MiB)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 32 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 64_000 }),
        (ki, bytes, milli) => {
          const r = nodeResourcesOf({ cpu: `${milli}m`, memory: `${ki}Ki`, pods: "110", "ephemeral-storage": String(bytes) })!;
          assert.equal(r.cpuMillis, milli);
          assert.ok(r.memoryMiB * 1024 <= ki && (r.memoryMiB + 1) * 1024 > ki);
          assert.ok(r.ephemeralStorageMiB * 2 ** 20 <= bytes && (r.ephemeralStorageMiB + 1) * 2 ** 20 > bytes);
        },
      ),
    );
    assert.equal(nodeResourcesOf({ cpu: "2", memory: "4Gi", pods: "110" }), undefined, "a missing field");
  });

  it("takes the smallest report, field by field, whatever the order the Nodes came in", () => {
    fc.assert(
      fc.property(fc.array(report, { minLength: 1, maxLength: 8 }), fc.nat(), (reports, shift) => {
        const fold = (list: LearnedCapacity[]) => list.reduce<LearnedCapacity | undefined>((known, r) => lowered(known, r), undefined)!;
        const learned = fold(reports);
        const rotated = fold([...reports.slice(shift % reports.length), ...reports.slice(0, shift % reports.length)]);
        assert.deepEqual(rotated, learned);
        for (const r of reports) {
          assert.ok(atMost(learned.capacity, r.capacity), "never above any Node's capacity");
          assert.ok(atMost(learned.allocatable, r.allocatable), "never above any Node's allocatable");
        }
        // Each learned field is one a Node reported.
        for (const f of FIELDS) assert.ok(reports.some((r) => r.allocatable[f] === learned.allocatable[f]));
        assert.deepEqual(lowered(learned, learned), learned);
      }),
    );
  });

  it("offers capacity less overhead equal to the smallest allocatable, with no negative overhead", () => {
    fc.assert(
      fc.property(fc.array(report, { minLength: 1, maxLength: 8 }), resources, (reports, est) => {
        const learned = reports.reduce<LearnedCapacity | undefined>((known, r) => lowered(known, r), undefined)!;
        const zero = { cpuMillis: 0, memoryMiB: 0, pods: 0, ephemeralStorageMiB: 0 };
        const offered = offeredResources({ capacity: est, overhead: zero, allocatable: est }, learned);
        assert.equal(offered.source, "learned");
        for (const f of FIELDS) {
          assert.ok(offered.overhead[f] >= 0, f);
          assert.equal(offered.capacity[f] - offered.overhead[f], learned.allocatable[f]);
        }
        assert.equal(offeredResources({ capacity: est, overhead: zero, allocatable: est }).source, "estimated");
      }),
    );
  });

  it("ignores a report with allocatable above capacity, no cpu or no memory", () => {
    const ok = { cpu: "2", memory: "3814Mi", pods: "110", "ephemeral-storage": "38Gi" };
    assert.ok(reportedCapacity({ capacity: ok, allocatable: { ...ok, memory: "3000Mi" } }));
    assert.equal(reportedCapacity({ capacity: ok, allocatable: { ...ok, memory: "4000Mi" } }), undefined);
    assert.equal(reportedCapacity({ capacity: { ...ok, cpu: "0" }, allocatable: { ...ok, cpu: "0" } }), undefined);
    assert.equal(reportedCapacity({ capacity: ok }), undefined);
  });

  it("lists a type as learned once its kind is known, with what Nodes reported, and estimated under other kubelet settings", () => {
    const catalog = shippedCatalog();
    const kubelet = kubeletSchema.parse({});
    const pool = { name: "burst", location: "hel1", serverTypes: ["cpx21", "cpx31"], image: "ubuntu-24.04" };
    const estimate = estimatedResources(findServerType(catalog, "cpx21")!, kubelet);
    const reported: LearnedCapacity = {
      capacity: { ...estimate.capacity, memoryMiB: estimate.capacity.memoryMiB - 40 },
      allocatable: { ...estimate.allocatable, memoryMiB: estimate.allocatable.memoryMiB - 40 },
    };
    const known = new Map<string, LearnedCapacity>([[JSON.stringify(["cpx21", "ubuntu-24.04", kubeletFingerprint(kubelet)]), reported]]);
    const lookup = (key: CapacityKey) => known.get(JSON.stringify([key.serverType, key.image, key.kubelet]));

    const [cpx21, cpx31] = poolInstanceTypes(catalog, pool, kubelet, undefined, undefined, lookup).instanceTypes;
    assert.equal(cpx21!.capacitySource, "learned");
    assert.deepEqual(cpx21!.capacity, formatResources(reported.capacity));
    assert.equal(cpx21!.memoryMiB, estimate.capacity.memoryMiB, "memoryMiB (the instance-memory label) stays the nominal figure");
    assert.equal(cpx31!.capacitySource, "estimated", "another type is not learned from cpx21's Nodes");

    const otherImage = poolInstanceTypes(catalog, { ...pool, image: "ubuntu-22.04" }, kubelet, undefined, undefined, lookup)
      .instanceTypes[0]!;
    assert.equal(otherImage.capacitySource, "estimated", "another image is another kind");
    const moreReserved = kubeletSchema.parse({ maxPods: kubelet.maxPods + 1 });
    const otherKubelet = poolInstanceTypes(catalog, pool, moreReserved, undefined, undefined, lookup).instanceTypes[0]!;
    assert.equal(otherKubelet.capacitySource, "estimated", "other kubelet settings make what was learned stale");
    assert.deepEqual(otherKubelet.capacity, formatResources(estimatedResources(findServerType(catalog, "cpx21")!, moreReserved).capacity));
  });
});
