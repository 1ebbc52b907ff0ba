/**
 * What the scaling API tells Karpenter about each server type of an autoscaled pool: capacity,
 * overhead (from `nodeOverhead`, the function that also writes the kubelet's reservations, so the
 * two never disagree), allocatable and priced offerings per zone, including unavailable ones
 * (Karpenter marks nodes of a type it no longer sees as drifted).
 */
import type { HcloudAutoscaledPool, KubeletSettings } from "../../components/fleet/fleetSpec";
import { nodeOverhead } from "../../components/bootstrap/kubeletReservations";
import type { OfferingAvailability } from "./offeringAvailability";
import { kubernetesArch, type ServerType, type ServerTypeCatalog } from "./serverTypes";

/** Resources in integer base units. */
export interface NodeResources {
  readonly cpuMillis: number;
  readonly memoryMiB: number;
  readonly pods: number;
  readonly ephemeralStorageMiB: number;
}

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
}

export interface InstanceTypeView {
  readonly name: string;
  readonly pool: string;
  readonly provider: "hcloud";
  readonly arch: "amd64" | "arm64";
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly gpu: number;
  readonly capacity: ResourceList;
  readonly overhead: ResourceList;
  readonly offerings: Offering[];
}

export function nodeCapacity(type: ServerType, kubelet: KubeletSettings): NodeResources {
  return {
    cpuMillis: type.cores * 1000,
    memoryMiB: Math.round(type.memoryGiB * 1024),
    pods: kubelet.maxPods,
    ephemeralStorageMiB: type.diskGB * 1024,
  };
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

/** The price of a type in a location; a type not sold there gets its lowest price elsewhere (its offering is unavailable anyway). */
function offeringFor(type: ServerType, location: string, availability: OfferingAvailability | undefined): Offering {
  const here = type.prices.find((p) => p.location === location);
  const price = here?.priceHourlyNet ?? Math.min(...type.prices.map((p) => p.priceHourlyNet), Number.POSITIVE_INFINITY);
  return {
    zone: location,
    capacityType: "on-demand",
    price: Number.isFinite(price) ? price : 0,
    available: here !== undefined && (availability?.isAvailable(type.name, location) ?? true),
  };
}

export function instanceTypeView(
  type: ServerType,
  pool: Pick<HcloudAutoscaledPool, "name" | "location">,
  kubelet: KubeletSettings,
  availability?: OfferingAvailability,
): InstanceTypeView {
  const capacity = nodeCapacity(type, kubelet);
  return {
    name: type.name,
    pool: pool.name,
    provider: "hcloud",
    arch: kubernetesArch(type.architecture),
    cpu: type.cores,
    memoryMiB: capacity.memoryMiB,
    gpu: 0,
    capacity: formatResources(capacity),
    overhead: formatResources(nodeOverheadFor(type, kubelet)),
    offerings: [offeringFor(type, pool.location, availability)],
  };
}

/** Every server type of the pool in declaration order; types missing from the catalog are reported, not invented. */
export function poolInstanceTypes(
  catalog: ServerTypeCatalog,
  pool: Pick<HcloudAutoscaledPool, "name" | "location" | "serverTypes">,
  kubelet: KubeletSettings,
  availability?: OfferingAvailability,
): { instanceTypes: InstanceTypeView[]; unknown: string[] } {
  const instanceTypes: InstanceTypeView[] = [];
  const unknown: string[] = [];
  for (const name of pool.serverTypes) {
    const type = catalog.serverTypes.find((t) => t.name === name);
    if (type) instanceTypes.push(instanceTypeView(type, pool, kubelet, availability));
    else unknown.push(name);
  }
  return { instanceTypes, unknown };
}
