/** fast-check generator of valid kubelet settings (kubeletSchema's ranges; optional fields left unset). */
import fc from "fast-check";

export const kubeletSettingsArbitrary = fc.record({
  maxPods: fc.integer({ min: 10, max: 500 }),
  reservedCpuMillis: fc.integer({ min: 0, max: 16_000 }),
  reservedMemoryMiB: fc.integer({ min: 0, max: 65_536 }),
  evictionHardMemoryMiB: fc.integer({ min: 0, max: 8_192 }),
  reservedEphemeralStorageGiB: fc.integer({ min: 0, max: 500 }),
});
