/**
 * Node overhead from the kubelet settings: the one source for what a node keeps for itself. The
 * scaling API computes allocatable from `nodeOverhead`; the k0s and kubeadm renderers write the
 * same numbers into kubelet flags or a KubeletConfiguration, so both always agree.
 */
import type { KubeletSettings } from "../fleet/fleetSpec";

/** A node's resources in integer base units: its capacity, overhead or allocatable (the scaling API's catalog). */
export interface NodeResources {
  readonly cpuMillis: number;
  readonly memoryMiB: number;
  readonly pods: number;
  readonly ephemeralStorageMiB: number;
}

/** Capacity a node does not offer to pods: kube-reserved plus the hard eviction thresholds. */
export interface NodeOverhead {
  /** kube-reserved CPU, millicores. */
  cpuMillis: number;
  /** kube-reserved memory plus the memory.available hard-eviction threshold, MiB. */
  memoryMiB: number;
  /** Fixed part only; `ephemeralStorageEvictionPercent` of the node's disk comes on top. */
  ephemeralStorageMiB: number;
  /** The nodefs.available hard-eviction threshold, a share of the node's root filesystem. */
  ephemeralStorageEvictionPercent: number;
}

// The kubelet's own defaults for the disk thresholds. Setting evictionHard replaces the whole default
// map, so they are written out explicitly to keep them.
const NODEFS_AVAILABLE_PERCENT = 10;
const NODEFS_INODES_FREE_PERCENT = 5;
const IMAGEFS_AVAILABLE_PERCENT = 15;

export function nodeOverhead(k: KubeletSettings): NodeOverhead {
  return {
    cpuMillis: k.reservedCpuMillis,
    memoryMiB: k.reservedMemoryMiB + k.evictionHardMemoryMiB,
    ephemeralStorageMiB: k.reservedEphemeralStorageGiB * 1024,
    ephemeralStorageEvictionPercent: NODEFS_AVAILABLE_PERCENT,
  };
}

/** The KubeletConfiguration fields (`maxPods`, `kubeReserved`, `evictionHard`) for these settings. */
export function kubeletReservationConfig(k: KubeletSettings): {
  maxPods: number;
  kubeReserved: Record<string, string>;
  evictionHard: Record<string, string>;
} {
  return {
    maxPods: k.maxPods,
    kubeReserved: {
      cpu: `${k.reservedCpuMillis}m`,
      memory: `${k.reservedMemoryMiB}Mi`,
      "ephemeral-storage": `${k.reservedEphemeralStorageGiB}Gi`,
    },
    evictionHard: {
      "memory.available": `${k.evictionHardMemoryMiB}Mi`,
      "nodefs.available": `${NODEFS_AVAILABLE_PERCENT}%`,
      "nodefs.inodesFree": `${NODEFS_INODES_FREE_PERCENT}%`,
      "imagefs.available": `${IMAGEFS_AVAILABLE_PERCENT}%`,
    },
  };
}

/**
 * The same settings as kubelet command-line flags (`--max-pods=110`,
 * `--kube-reserved=cpu=100m,...`, `--eviction-hard=memory.available<100Mi,...`). No value contains
 * whitespace, so the flags survive k0s's whitespace-split `--kubelet-extra-args`.
 */
export function kubeletReservationFlags(k: KubeletSettings): string[] {
  const config = kubeletReservationConfig(k);
  const pairs = (map: Record<string, string>, sep: string) =>
    Object.entries(map)
      .map(([key, value]) => `${key}${sep}${value}`)
      .join(",");
  return [
    `--max-pods=${config.maxPods}`,
    `--kube-reserved=${pairs(config.kubeReserved, "=")}`,
    `--eviction-hard=${pairs(config.evictionHard, "<")}`,
  ];
}
