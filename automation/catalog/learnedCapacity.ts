/**
 * Learned node capacity: what registered Nodes really report (`status.capacity` and
 * `status.allocatable`) per server type, image and kubelet settings, replacing the VM overhead
 * estimate of instanceTypes.ts once a first Node of the kind has registered. The smallest value
 * seen wins, field by field: a Node reporting less lowers the offer, none ever raises it, so
 * Karpenter is never promised what a node of the type may not have (docs/scaling-api.md).
 */
import type { NodeResources } from "../../components/bootstrap/kubeletReservations";
import { canonicalHash } from "../../components/shared/canonicalJson";
import type { KubeletSettings } from "../../components/fleet/fleetSpec";

/** What Nodes of one kind reported: the smallest capacity and the smallest allocatable seen, each field apart. */
export interface LearnedCapacity {
  readonly capacity: NodeResources;
  readonly allocatable: NodeResources;
}

/** What learned capacity is kept by: a Node's server type, image and the kubelet settings it was configured with. */
export interface CapacityKey {
  readonly serverType: string;
  readonly image: string;
  /** kubeletFingerprint() of the settings: new reservations make what was learned before stale. */
  readonly kubelet: string;
}

/** A short fingerprint of the kubelet settings (reservations, eviction thresholds, maxPods). */
export function kubeletFingerprint(kubelet: KubeletSettings): string {
  return canonicalHash(kubelet).slice(0, 16);
}

const SUFFIXES: Readonly<Record<string, number>> = {
  "": 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?)$/;

/**
 * A Kubernetes resource quantity (`1930m`, `3906216Ki`, `40G`, `2`) in base units (cores, bytes,
 * pods); undefined for anything else, negative values included.
 */
export function parseQuantity(text: unknown): number | undefined {
  if (typeof text !== "string") return undefined;
  const match = QUANTITY.exec(text);
  if (!match) return undefined;
  const [, digits, exponent, suffix] = match;
  const value = Number(digits) * (exponent !== undefined ? 10 ** Number(exponent) : SUFFIXES[suffix ?? ""]!);
  return Number.isFinite(value) ? value : undefined;
}

/** Rounded down after removing the float noise of the multiplication (0.1 * 1000), so a value is never rounded up. */
function floorClean(value: number): number {
  return Math.floor(Math.round(value * 1e6) / 1e6);
}

/** A Node's resource list (`status.capacity` or `status.allocatable`) as whole millicores, MiB and pods, rounded down; undefined when a field is missing or unreadable. */
export function nodeResourcesOf(list: unknown): NodeResources | undefined {
  if (typeof list !== "object" || list === null) return undefined;
  const r = list as Record<string, unknown>;
  const cpu = parseQuantity(r.cpu);
  const memory = parseQuantity(r.memory);
  const pods = parseQuantity(r.pods);
  const storage = parseQuantity(r["ephemeral-storage"]);
  if (cpu === undefined || memory === undefined || pods === undefined || storage === undefined) return undefined;
  return {
    cpuMillis: floorClean(cpu * 1000),
    memoryMiB: floorClean(memory / 2 ** 20),
    pods: floorClean(pods),
    ephemeralStorageMiB: floorClean(storage / 2 ** 20),
  };
}

const FIELDS = ["cpuMillis", "memoryMiB", "pods", "ephemeralStorageMiB"] as const;

/**
 * What one Node reports, when it is usable: both lists readable, cpu and memory above zero and
 * nothing allocatable beyond capacity (a kubelet still starting, or a broken one, teaches nothing).
 */
export function reportedCapacity(status: { readonly capacity?: unknown; readonly allocatable?: unknown }): LearnedCapacity | undefined {
  const capacity = nodeResourcesOf(status.capacity);
  const allocatable = nodeResourcesOf(status.allocatable);
  if (!capacity || !allocatable) return undefined;
  if (capacity.cpuMillis <= 0 || capacity.memoryMiB <= 0 || allocatable.cpuMillis <= 0 || allocatable.memoryMiB <= 0) return undefined;
  if (FIELDS.some((f) => allocatable[f] > capacity[f])) return undefined;
  return { capacity, allocatable };
}

function smaller(a: NodeResources, b: NodeResources): NodeResources {
  return {
    cpuMillis: Math.min(a.cpuMillis, b.cpuMillis),
    memoryMiB: Math.min(a.memoryMiB, b.memoryMiB),
    pods: Math.min(a.pods, b.pods),
    ephemeralStorageMiB: Math.min(a.ephemeralStorageMiB, b.ephemeralStorageMiB),
  };
}

/** What is known after one more Node reported `seen`: each field the smaller of the two. */
export function lowered(known: LearnedCapacity | undefined, seen: LearnedCapacity): LearnedCapacity {
  if (!known) return seen;
  return { capacity: smaller(known.capacity, seen.capacity), allocatable: smaller(known.allocatable, seen.allocatable) };
}

export function sameCapacity(a: LearnedCapacity | undefined, b: LearnedCapacity): boolean {
  return a !== undefined && FIELDS.every((f) => a.capacity[f] === b.capacity[f] && a.allocatable[f] === b.allocatable[f]);
}

/** What a server type is offered with: the estimate until Nodes of its kind reported, then what they reported. */
export interface OfferedResources {
  readonly source: "estimated" | "learned";
  readonly capacity: NodeResources;
  /** capacity less allocatable: what Karpenter subtracts (its overhead) to get the allocatable. */
  readonly overhead: NodeResources;
  readonly allocatable: NodeResources;
}

/**
 * The learned values when there are any, else the estimate. The overhead is the difference, so
 * Karpenter's capacity - overhead is exactly the smallest allocatable seen (never below zero: the
 * smallest allocatable is at most the allocatable of the Node with the smallest capacity).
 */
export function offeredResources(estimate: Omit<OfferedResources, "source">, learned?: LearnedCapacity): OfferedResources {
  if (!learned) return { source: "estimated", ...estimate };
  const { capacity, allocatable } = learned;
  return {
    source: "learned",
    capacity,
    allocatable,
    overhead: {
      cpuMillis: capacity.cpuMillis - allocatable.cpuMillis,
      memoryMiB: capacity.memoryMiB - allocatable.memoryMiB,
      pods: capacity.pods - allocatable.pods,
      ephemeralStorageMiB: capacity.ephemeralStorageMiB - allocatable.ephemeralStorageMiB,
    },
  };
}

/** Looks up what was learned for a key (the store's cache, or a test's map). */
export type LearnedCapacityLookup = (key: CapacityKey) => LearnedCapacity | undefined;
