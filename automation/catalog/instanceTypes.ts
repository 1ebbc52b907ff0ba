/**
 * What the scaling API tells Karpenter about each server type of an autoscaled pool: capacity,
 * overhead (from `nodeOverhead`, the function that also writes the kubelet's reservations, so the
 * two never disagree), allocatable and priced offerings per zone, including unavailable ones
 * (Karpenter marks nodes of a type it no longer sees as drifted). Once a Node of the type, the
 * pool's image and the cluster's kubelet settings has registered, capacity and overhead are what
 * such Nodes reported instead of the estimate (learnedCapacity.ts).
 */
import type { HcloudAutoscaledPool, KubeletSettings } from "../../components/fleet/fleetSpec";
import { nodeOverhead, type NodeResources } from "../../components/bootstrap/kubeletReservations";
import { hcloudRegion } from "../../components/fleet/hcloudLocations";
import { kubeletFingerprint, offeredResources, type LearnedCapacityLookup, type OfferedResources } from "./learnedCapacity";
import type { OfferingAvailability, PoolRef } from "./offeringAvailability";
import { kubernetesArch, primaryIpv4Price, type ServerType, type ServerTypeCatalog } from "./serverTypes";

/** Kubernetes resource quantities, as a Node's `status.capacity` spells them. */
export interface ResourceList {
  readonly cpu: string;
  readonly memory: string;
  readonly pods: string;
  readonly "ephemeral-storage": string;
}

export interface Offering {
  /** Hetzner location name, the node's topology.kubernetes.io/zone. */
  readonly zone: string;
  readonly capacityType: "on-demand";
  /** EUR per hour, net. */
  readonly price: number;
  readonly available: boolean;
  /** Why the offering is unavailable (absent while it is available). */
  readonly unavailableReason?: string;
  /** Until when (ISO 8601) a failed create keeps it unavailable; absent for any other reason. */
  readonly backoffUntil?: string;
}

export interface InstanceTypeView {
  readonly name: string;
  readonly pool: string;
  readonly provider: "hcloud";
  readonly arch: "amd64" | "arm64";
  readonly os: "linux";
  /** topology.kubernetes.io/region: the Hetzner network zone of the pool's location. */
  readonly region: string;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly gpu: number;
  readonly capacity: ResourceList;
  readonly overhead: ResourceList;
  /** `estimated` from the server type's figures, or `learned` from what registered Nodes of its kind reported. */
  readonly capacitySource: OfferedResources["source"];
  readonly offerings: Offering[];
}

/**
 * The share of a server's memory the kubelet never sees: firmware, the kernel's own reservations and
 * crash kernel, taken before MemTotal (which is what the kubelet reports as capacity). A Hetzner VM
 * of 4 GiB shows about 3.8 GiB; 7.5 % errs on the low side (as Karpenter's AWS provider's default
 * vmMemoryOverheadPercent), so Karpenter never plans for memory a node will not have.
 */
const VM_MEMORY_OVERHEAD_PERMILLE = 75;

/** Hetzner's server types give memory in GiB and disk in decimal GB (10^9 bytes): both to MiB, rounded down. */
export function nodeCapacity(type: ServerType, kubelet: KubeletSettings): NodeResources {
  return {
    cpuMillis: type.cores * 1000,
    memoryMiB: Math.floor((type.memoryGiB * 1024 * (1000 - VM_MEMORY_OVERHEAD_PERMILLE)) / 1000),
    pods: kubelet.maxPods,
    ephemeralStorageMiB: Math.floor((type.diskGB * 1e9) / 2 ** 20),
  };
}

/** The pool's limits and what its nodes use now (cpu in millicores, memory in MiB). */
export interface PoolHeadroom {
  readonly limits: HcloudAutoscaledPool["limits"];
  readonly usage: { readonly nodes: number; readonly cpuMillis: number; readonly memoryMiB: number };
}

/** Which limit another node of this capacity would break, if any. */
export function limitExceeded(
  capacity: Pick<NodeResources, "cpuMillis" | "memoryMiB">,
  { limits, usage }: PoolHeadroom,
): "maxNodes" | "cpu" | "memoryGiB" | undefined {
  if (usage.nodes + 1 > limits.maxNodes) return "maxNodes";
  if (limits.cpu !== undefined && usage.cpuMillis + capacity.cpuMillis > limits.cpu * 1000) return "cpu";
  if (limits.memoryGiB !== undefined && usage.memoryMiB + capacity.memoryMiB > limits.memoryGiB * 1024) return "memoryGiB";
  return undefined;
}

export function nodeOverheadFor(type: ServerType, kubelet: KubeletSettings): NodeResources {
  const overhead = nodeOverhead(kubelet);
  const disk = nodeCapacity(type, kubelet).ephemeralStorageMiB;
  return {
    cpuMillis: overhead.cpuMillis,
    memoryMiB: overhead.memoryMiB,
    pods: 0,
    ephemeralStorageMiB: overhead.ephemeralStorageMiB + Math.ceil((disk * overhead.ephemeralStorageEvictionPercent) / 100),
  };
}

/** The estimate: the server type's figures less the VM overhead, and the kubelet's reservations. */
export function estimatedResources(type: ServerType, kubelet: KubeletSettings): Omit<OfferedResources, "source"> {
  const capacity = nodeCapacity(type, kubelet);
  const overhead = nodeOverheadFor(type, kubelet);
  return { capacity, overhead, allocatable: allocatable(capacity, overhead) };
}

/**
 * What a node of the type is offered (and admitted) with in a pool of `image`: what Nodes of its
 * kind reported when `learned` knows it, else the estimate.
 */
export function offeredFor(type: ServerType, image: string, kubelet: KubeletSettings, learned?: LearnedCapacityLookup): OfferedResources {
  const known = learned?.({ serverType: type.name, image, kubelet: kubeletFingerprint(kubelet) });
  return offeredResources(estimatedResources(type, kubelet), known);
}

export function allocatable(capacity: NodeResources, overhead: NodeResources): NodeResources {
  return {
    cpuMillis: Math.max(0, capacity.cpuMillis - overhead.cpuMillis),
    memoryMiB: Math.max(0, capacity.memoryMiB - overhead.memoryMiB),
    pods: Math.max(0, capacity.pods - overhead.pods),
    ephemeralStorageMiB: Math.max(0, capacity.ephemeralStorageMiB - overhead.ephemeralStorageMiB),
  };
}

export function formatResources(r: NodeResources): ResourceList {
  return {
    cpu: r.cpuMillis % 1000 === 0 ? String(r.cpuMillis / 1000) : `${r.cpuMillis}m`,
    memory: `${r.memoryMiB}Mi`,
    pods: String(r.pods),
    "ephemeral-storage": `${r.ephemeralStorageMiB}Mi`,
  };
}

/**
 * The price of a type in a location, plus `ipv4Price` (the primary IPv4 Hetzner bills with a server
 * that has one); a type not sold there gets its lowest price elsewhere (its offering is unavailable anyway). An offering is also unavailable while the pool has no room for
 * another node of the type, so Karpenter does not keep choosing it and getting InsufficientCapacity.
 */
function offeringFor(
  type: ServerType,
  location: string,
  availability: OfferingAvailability | undefined,
  fitsLimits: boolean,
  pool: PoolRef | undefined,
  ipv4Price: number,
): Offering {
  const here = type.prices.find((p) => p.location === location);
  const price = here?.priceHourlyNet ?? Math.min(...type.prices.map((p) => p.priceHourlyNet), Number.POSITIVE_INFINITY);
  const unavailableReason =
    here === undefined
      ? `${type.name} is not sold in ${location}`
      : (availability?.unavailableReason(type.name, location, pool) ??
        (fitsLimits ? undefined : "the pool has no room for a node of this type under its limits"));
  const backoff = here === undefined ? undefined : availability?.backoff(type.name, location, pool);
  return {
    zone: location,
    capacityType: "on-demand",
    // Rounded to the API's own precision (4 decimals in /pricing, here 6), so the sum shows no float noise.
    price: Number.isFinite(price) ? Math.round((price + ipv4Price) * 1e6) / 1e6 : 0,
    available: unavailableReason === undefined,
    ...(unavailableReason !== undefined ? { unavailableReason } : {}),
    // The provider's own report wins over a backoff in the reason, and then no backoff is named.
    ...(backoff !== undefined && unavailableReason === backoff.reason ? { backoffUntil: new Date(backoff.until).toISOString() } : {}),
  };
}

function instanceTypeView(
  type: ServerType,
  pool: Pick<HcloudAutoscaledPool, "name" | "location" | "image"> & Partial<Pick<HcloudAutoscaledPool, "publicIpv4" | "locations">>,
  ipv4Prices: Pick<ServerTypeCatalog, "primaryIpv4">,
  kubelet: KubeletSettings,
  availability?: OfferingAvailability,
  headroom?: PoolHeadroom,
  learned?: LearnedCapacityLookup,
  clusterId?: string,
): InstanceTypeView {
  const offered = offeredFor(type, pool.image, kubelet, learned);
  return {
    name: type.name,
    pool: pool.name,
    provider: "hcloud",
    arch: kubernetesArch(type.architecture),
    os: "linux",
    region: hcloudRegion(pool.location),
    cpu: type.cores,
    // The nominal figure behind the instance-memory label: stable, whatever Nodes reported.
    memoryMiB: nodeCapacity(type, kubelet).memoryMiB,
    gpu: 0,
    capacity: formatResources(offered.capacity),
    overhead: formatResources(offered.overhead),
    capacitySource: offered.source,
    // One offering per location of the pool (Karpenter's zone), each with its own availability.
    offerings: (pool.locations ?? [pool.location]).map((location) =>
      offeringFor(
        type,
        location,
        availability,
        headroom === undefined || limitExceeded(offered.capacity, headroom) === undefined,
        clusterId !== undefined ? { clusterId, pool: pool.name } : undefined,
        pool.publicIpv4 === false ? 0 : primaryIpv4Price(ipv4Prices, location),
      ),
    ),
  };
}

/** Every server type of the pool in declaration order; types missing from the catalog are reported, not invented. */
export function poolInstanceTypes(
  catalog: ServerTypeCatalog,
  pool: Pick<HcloudAutoscaledPool, "name" | "location" | "serverTypes" | "image"> &
    Partial<Pick<HcloudAutoscaledPool, "publicIpv4" | "locations">>,
  kubelet: KubeletSettings,
  availability?: OfferingAvailability,
  headroom?: PoolHeadroom,
  learned?: LearnedCapacityLookup,
  /** The pool's cluster: its pool-wide backoff (offeringAvailability.ts) makes every offering unavailable. */
  clusterId?: string,
): { instanceTypes: InstanceTypeView[]; unknown: string[] } {
  const instanceTypes: InstanceTypeView[] = [];
  const unknown: string[] = [];
  for (const name of pool.serverTypes) {
    const type = catalog.serverTypes.find((t) => t.name === name);
    if (type) instanceTypes.push(instanceTypeView(type, pool, catalog, kubelet, availability, headroom, learned, clusterId));
    else unknown.push(name);
  }
  return { instanceTypes, unknown };
}
