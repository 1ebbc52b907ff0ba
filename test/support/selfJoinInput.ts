/** The k0s self-join input the bootstrap tests start from; each test overrides what it is about. */
import type { K0sSelfJoinInput } from "../../components/bootstrap/selfJoinScript";

/** The kubelet settings the bootstrap tests render with: the fleet spec's defaults. */
export const TEST_KUBELET = {
  maxPods: 110,
  reservedCpuMillis: 100,
  reservedMemoryMiB: 512,
  evictionHardMemoryMiB: 100,
  reservedEphemeralStorageGiB: 1,
};

export function k0sSelfJoinInput(overrides: Partial<K0sSelfJoinInput> = {}): K0sSelfJoinInput {
  return {
    kind: "k0s",
    k0sVersion: "v1.33.4+k0s.0",
    joinToken: "H4sIAAAAAAAC/0pMTAQEAAD//wMAy0Lq0AQAAAA=",
    kubelet: TEST_KUBELET,
    hostname: "example-kura-0",
    providerID: "nodefleet:///example/kura-0",
    labels: {},
    taints: [],
    ...overrides,
  };
}
