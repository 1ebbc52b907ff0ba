import { strict as assert } from "node:assert";
import fc from "fast-check";
import { kubeletSchema } from "../../components/fleet/fleetSpec";
import { kubeletReservationConfig, kubeletReservationFlags, nodeOverhead } from "../../components/bootstrap/kubeletReservations";
import { kubeletSettingsArbitrary } from "../support/kubeletSettingsArbitrary";

describe("kubelet reservations", () => {
  const defaults = kubeletSchema.parse({});

  it("renders the default settings as kubelet flags", () => {
    assert.deepEqual(kubeletReservationFlags(defaults), [
      "--max-pods=110",
      "--kube-reserved=cpu=100m,memory=512Mi,ephemeral-storage=1Gi",
      "--eviction-hard=memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%",
    ]);
  });

  it("counts reserved memory plus the memory eviction threshold as overhead", () => {
    assert.deepEqual(nodeOverhead(defaults), {
      cpuMillis: 100,
      memoryMiB: 612,
      ephemeralStorageMiB: 1024,
      ephemeralStorageEvictionPercent: 10,
    });
  });

  it("flags, config and overhead agree for any settings (property)", () => {
    fc.assert(
      fc.property(kubeletSettingsArbitrary, (k) => {
        const config = kubeletReservationConfig(k);
        const flags = kubeletReservationFlags(k);
        const overhead = nodeOverhead(k);
        assert.equal(flags[0], `--max-pods=${config.maxPods}`);
        // Parse the flags back the way the kubelet does (comma-separated pairs).
        const kubeReserved = Object.fromEntries(
          flags[1]
            .replace("--kube-reserved=", "")
            .split(",")
            .map((p) => p.split("=") as [string, string]),
        );
        const evictionHard = Object.fromEntries(
          flags[2]
            .replace("--eviction-hard=", "")
            .split(",")
            .map((p) => p.split("<") as [string, string]),
        );
        assert.deepEqual(kubeReserved, config.kubeReserved);
        assert.deepEqual(evictionHard, config.evictionHard);
        assert.equal(parseInt(config.kubeReserved.cpu, 10), overhead.cpuMillis);
        assert.equal(parseInt(config.kubeReserved.memory, 10) + parseInt(config.evictionHard["memory.available"], 10), overhead.memoryMiB);
        assert.equal(parseInt(config.kubeReserved["ephemeral-storage"], 10) * 1024, overhead.ephemeralStorageMiB);
        assert.equal(parseInt(config.evictionHard["nodefs.available"], 10), overhead.ephemeralStorageEvictionPercent);
        for (const flag of flags) assert.doesNotMatch(flag, /\s/, "k0s splits --kubelet-extra-args on whitespace");
      }),
    );
  });
});
