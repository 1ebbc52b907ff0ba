/**
 * Admission of a create: which server type a new node gets, or why it cannot have one. Pure: the
 * caller runs it inside the transaction that counts the pool's usage and inserts the claim, so
 * concurrent creates cannot overshoot a limit.
 */
import type { HcloudAutoscaledPool, KubeletSettings } from "../../components/fleet/fleetSpec";
import { allocatable, nodeCapacity, nodeOverheadFor, type NodeResources } from "../catalog/instanceTypes";
import type { OfferingAvailability } from "../catalog/offeringAvailability";
import { offeringLabels, requirementsAllow, type Requirement } from "../catalog/requirements";
import { kubernetesArch, type ServerType, type ServerTypeCatalog } from "../catalog/serverTypes";
import type { PoolUsage } from "../store/claimStore";
import { ApiError } from "./apiError";

export interface AdmissionRequest {
  readonly instanceType?: string;
  readonly zone?: string;
  readonly requirements?: readonly Requirement[];
}

export interface Admitted {
  readonly serverType: ServerType;
  readonly location: string;
  readonly price: number;
  readonly capacity: NodeResources;
  readonly allocatable: NodeResources;
}

function priceIn(type: ServerType, location: string): number | undefined {
  return type.prices.find((p) => p.location === location)?.priceHourlyNet;
}

export function admit(input: {
  pool: HcloudAutoscaledPool;
  kubelet: KubeletSettings;
  request: AdmissionRequest;
  catalog: ServerTypeCatalog;
  availability: OfferingAvailability;
  usage: PoolUsage;
}): Admitted {
  const { pool, kubelet, request, catalog, availability, usage } = input;
  const location = pool.location;
  if (request.zone !== undefined && request.zone !== location) {
    throw new ApiError("NoCompatibleInstanceType", `pool ${pool.name} runs in zone ${location}, not ${request.zone}`, {
      pool: pool.name,
      zones: [location],
    });
  }
  if (request.instanceType !== undefined && !pool.serverTypes.includes(request.instanceType)) {
    throw new ApiError("NoCompatibleInstanceType", `instance type ${request.instanceType} is not allowed in pool ${pool.name}`, {
      pool: pool.name,
      allowed: pool.serverTypes,
    });
  }
  const named = request.instanceType !== undefined ? [request.instanceType] : pool.serverTypes;
  const fitting = named
    .map((name) => catalog.serverTypes.find((t) => t.name === name))
    .filter((t): t is ServerType => t !== undefined)
    .filter((t) =>
      requirementsAllow(
        request.requirements ?? [],
        offeringLabels({
          instanceType: t.name,
          zone: location,
          arch: kubernetesArch(t.architecture),
          pool: pool.name,
          cpu: t.cores,
          memoryMiB: nodeCapacity(t, kubelet).memoryMiB,
        }),
      ),
    );
  if (fitting.length === 0) {
    throw new ApiError("NoCompatibleInstanceType", `no instance type of pool ${pool.name} satisfies the request`, {
      pool: pool.name,
      considered: named,
    });
  }
  const available = fitting.filter((t) => priceIn(t, location) !== undefined && availability.isAvailable(t.name, location));
  if (available.length === 0) {
    throw new ApiError("InsufficientCapacity", `every fitting offering of pool ${pool.name} in ${location} is unavailable`, {
      pool: pool.name,
      unavailable: fitting.map((t) => `${t.name}@${location}`),
    });
  }
  if (usage.nodes + 1 > pool.limits.maxNodes) {
    throw new ApiError("InsufficientCapacity", `pool ${pool.name} is at its limit of ${pool.limits.maxNodes} nodes`, {
      pool: pool.name,
      limit: "maxNodes",
      used: usage.nodes,
    });
  }
  const cpuLeft = pool.limits.cpu !== undefined ? pool.limits.cpu * 1000 - usage.cpuMillis : Number.POSITIVE_INFINITY;
  const memLeft = pool.limits.memoryGiB !== undefined ? pool.limits.memoryGiB * 1024 - usage.memoryMiB : Number.POSITIVE_INFINITY;
  const withinLimits = available.filter((t) => {
    const c = nodeCapacity(t, kubelet);
    return c.cpuMillis <= cpuLeft && c.memoryMiB <= memLeft;
  });
  if (withinLimits.length === 0) {
    throw new ApiError("InsufficientCapacity", `pool ${pool.name} has no cpu or memory left under its limits for another node`, {
      pool: pool.name,
      limit: pool.limits.cpu !== undefined && available.every((t) => t.cores * 1000 > cpuLeft) ? "cpu" : "memoryGiB",
      cpuMillisLeft: Number.isFinite(cpuLeft) ? cpuLeft : null,
      memoryMiBLeft: Number.isFinite(memLeft) ? memLeft : null,
    });
  }
  // Cheapest first; declaration order breaks ties (Array.prototype.sort is stable).
  const [chosen] = [...withinLimits].sort((a, b) => priceIn(a, location)! - priceIn(b, location)!);
  const capacity = nodeCapacity(chosen!, kubelet);
  return {
    serverType: chosen!,
    location,
    price: priceIn(chosen!, location)!,
    capacity,
    allocatable: allocatable(capacity, nodeOverheadFor(chosen!, kubelet)),
  };
}
