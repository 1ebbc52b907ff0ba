/**
 * Admission of a create: which server type a new node gets, or why it cannot have one. Pure: the
 * caller runs it inside the transaction that counts the pool's usage and inserts the claim, so
 * concurrent creates cannot overshoot a limit.
 */
import type { HcloudAutoscaledPool, KubeletSettings } from "../../components/fleet/fleetSpec";
import { HCLOUD_MAX_SERVERS_PER_NETWORK, hcloudRegion } from "../../components/fleet/hcloudLocations";
import type { NodeResources } from "../../components/bootstrap/kubeletReservations";
import { limitExceeded, nodeCapacity, offeredFor } from "../catalog/instanceTypes";
import type { LearnedCapacityLookup } from "../catalog/learnedCapacity";
import type { OfferingAvailability } from "../catalog/offeringAvailability";
import { offeringLabels, requirementsAllow, unmetMinValues, type Requirement } from "../catalog/requirements";
import { kubernetesArch, type ServerType, type ServerTypeCatalog } from "../catalog/serverTypes";
import { imageUnavailableReason, type PoolImages } from "../catalog/poolImageSource";
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

/**
 * The offerings whose architecture has an image: a type of an architecture the pool's selector
 * matches no image of cannot boot. None left refuses the request, naming the field and the rule.
 */
function imagedOfferings<T extends { readonly type: ServerType; readonly location: string }>(
  poolName: string,
  offerings: readonly T[],
  images: { readonly resolved: PoolImages; readonly poolIndex: number } | undefined,
): readonly T[] {
  if (images === undefined) return offerings;
  const imaged = offerings.filter((o) => imageUnavailableReason(images.resolved, o.type.name) === undefined);
  if (imaged.length > 0) return imaged;
  const field = `nodefleet:pools[${images.poolIndex}].imageSelector`;
  const reasons = [...new Set(offerings.map((o) => imageUnavailableReason(images.resolved, o.type.name)!))];
  const types = [...new Set(offerings.map((o) => `${o.type.name} (${kubernetesArch(o.type.architecture)})`))];
  throw new ApiError(
    "NoCompatibleInstanceType",
    `${field}: every server type the request allows (${types.join(", ")}) needs an image of its architecture matching the selector: ${reasons.join("; ")}`,
    {
      pool: poolName,
      field,
      offerings: offerings.map((o) => ({
        instanceType: o.type.name,
        zone: o.location,
        reason: imageUnavailableReason(images.resolved, o.type.name)!,
      })),
    },
  );
}

export function admit(input: {
  pool: HcloudAutoscaledPool;
  kubelet: KubeletSettings;
  request: AdmissionRequest;
  catalog: ServerTypeCatalog;
  availability: OfferingAvailability;
  /** The pool's cluster, for pool-wide backoffs (an unusable image, a full network); default: none checked. */
  clusterId?: string;
  usage: PoolUsage;
  /**
   * Servers on the cluster's private network besides the one to admit: the static pools' on it and
   * the API's members admitted onto it, whatever their pool is now. Checked against Hetzner's 100
   * only for a pool on the private network; a `network: public` pool has only its own limits.
   * Default: not checked (the spec's check of the pools' sizes holds).
   */
  serversOnNetwork?: number;
  /** What registered Nodes reported per server type and image: used instead of the estimate where known. */
  learned?: LearnedCapacityLookup;
  /**
   * For a pool with `imageSelector`: its images per architecture, resolved for this admission
   * (catalog/poolImageSource.ts), and its index in `nodefleet:pools` for the field a refusal names.
   */
  images?: { readonly resolved: PoolImages; readonly poolIndex: number };
}): Admitted {
  const { pool, kubelet, request, catalog, availability, clusterId, usage, serversOnNetwork, learned, images } = input;
  // Karpenter's zone is the location: a pool with `locations` offers each type once per location, and
  // the request's zone (or its zone requirement) decides; otherwise the cheapest available offering.
  const locations = pool.locations ?? [pool.location];
  if (request.zone !== undefined && !locations.includes(request.zone)) {
    throw new ApiError("NoCompatibleInstanceType", `pool ${pool.name} runs in zone ${locations.join(", ")}, not ${request.zone}`, {
      pool: pool.name,
      zones: [...locations],
    });
  }
  const where = request.zone !== undefined ? [request.zone] : locations;
  const inText = where.join(", ");
  if (request.instanceType !== undefined && !pool.serverTypes.includes(request.instanceType)) {
    throw new ApiError("NoCompatibleInstanceType", `instance type ${request.instanceType} is not allowed in pool ${pool.name}`, {
      pool: pool.name,
      allowed: pool.serverTypes,
    });
  }
  const named = request.instanceType !== undefined ? [request.instanceType] : pool.serverTypes;
  const requirements = request.requirements ?? [];
  const candidates = named
    .map((name) => catalog.serverTypes.find((t) => t.name === name))
    .filter((t): t is ServerType => t !== undefined)
    .flatMap((type) => where.map((location) => ({ type, location })))
    .map(({ type, location }) => ({
      type,
      location,
      labels: offeringLabels({
        instanceType: type.name,
        zone: location,
        region: hcloudRegion(location),
        arch: kubernetesArch(type.architecture),
        pool: pool.name,
        cpu: type.cores,
        memoryMiB: nodeCapacity(type, kubelet).memoryMiB,
      }),
    }))
    .filter((c) => requirementsAllow(requirements, c.labels));
  if (candidates.length === 0) {
    throw new ApiError("NoCompatibleInstanceType", `no instance type of pool ${pool.name} satisfies the request`, {
      pool: pool.name,
      considered: named,
    });
  }
  const unmet = unmetMinValues(
    requirements,
    candidates.map((c) => c.labels),
  );
  if (unmet.length > 0) {
    throw new ApiError(
      "NoCompatibleInstanceType",
      `pool ${pool.name} has fewer fitting values than minValues asks for: ${unmet.map((u) => `${u.key} has ${u.found} of ${u.minValues}`).join("; ")}`,
      { pool: pool.name, minValues: unmet },
    );
  }
  const fitting = imagedOfferings(
    pool.name,
    candidates.map((c) => ({ type: c.type, location: c.location })),
    images,
  );
  const poolRef = clusterId !== undefined ? { clusterId, pool: pool.name } : undefined;
  // A pool-wide backoff refuses before anything else is weighed: no engine run would get further.
  const blocked = poolRef && availability.poolUnavailable(poolRef.clusterId, poolRef.pool);
  if (blocked) {
    throw new ApiError(
      "InsufficientCapacity",
      `pool ${pool.name} is backed off until ${new Date(blocked.until).toISOString()}: ${blocked.reason}`,
      {
        pool: pool.name,
        limit: "backoff",
        kind: blocked.kind,
        retryAt: new Date(blocked.until).toISOString(),
        offerings: fitting.map((o) => ({ instanceType: o.type.name, zone: o.location, reason: blocked.reason })),
      },
    );
  }
  const available = fitting.filter(
    (o) => priceIn(o.type, o.location) !== undefined && availability.isAvailable(o.type.name, o.location, poolRef),
  );
  if (available.length === 0) {
    // Each refused offering with its reason: the driver marks exactly these unavailable.
    const offerings = fitting.map((o) => ({
      instanceType: o.type.name,
      zone: o.location,
      reason:
        priceIn(o.type, o.location) === undefined
          ? `${o.type.name} is not sold in ${o.location}`
          : (availability.unavailableReason(o.type.name, o.location, poolRef) ?? "unavailable"),
    }));
    const each = (o: (typeof offerings)[number]) => (where.length > 1 ? `${o.instanceType}@${o.zone}` : o.instanceType);
    throw new ApiError(
      "InsufficientCapacity",
      `every fitting offering of pool ${pool.name} in ${inText} is unavailable: ${offerings.map((o) => `${each(o)} (${o.reason})`).join("; ")}`.slice(
        0,
        1000,
      ),
      {
        pool: pool.name,
        unavailable: fitting.map((o) => `${o.type.name}@${o.location}`),
        offerings,
      },
    );
  }
  const headroom = { limits: pool.limits, usage };
  const offered = available.map((o) => offeredFor(o.type, pool.image, kubelet, learned));
  const exceeded = offered.map((o) => limitExceeded(o.capacity, headroom));
  const withinLimits = available.filter((_t, i) => exceeded[i] === undefined);
  if (withinLimits.length === 0) {
    const limit = exceeded.includes("maxNodes") ? "maxNodes" : exceeded.includes("cpu") ? "cpu" : "memoryGiB";
    const cpuLeft = pool.limits.cpu !== undefined ? pool.limits.cpu * 1000 - usage.cpuMillis : null;
    const memLeft = pool.limits.memoryGiB !== undefined ? pool.limits.memoryGiB * 1024 - usage.memoryMiB : null;
    throw new ApiError(
      "InsufficientCapacity",
      limit === "maxNodes"
        ? `pool ${pool.name} is at its limit of ${pool.limits.maxNodes} nodes`
        : `pool ${pool.name} has no cpu or memory left under its limits for another node`,
      limit === "maxNodes"
        ? { pool: pool.name, limit, used: usage.nodes }
        : { pool: pool.name, limit, cpuMillisLeft: cpuLeft, memoryMiBLeft: memLeft },
    );
  }
  if (pool.network !== "public" && serversOnNetwork !== undefined && serversOnNetwork >= HCLOUD_MAX_SERVERS_PER_NETWORK) {
    throw new ApiError(
      "InsufficientCapacity",
      `pool ${pool.name} is on the private network, which holds ${HCLOUD_MAX_SERVERS_PER_NETWORK} servers and has ${serversOnNetwork} on it or declared for it`,
      { pool: pool.name, limit: "network", used: serversOnNetwork },
    );
  }
  // Cheapest first; declaration order (types, then locations as listed) breaks ties (Array.prototype.sort is stable).
  const [chosen] = [...withinLimits].sort((a, b) => priceIn(a.type, a.location)! - priceIn(b.type, b.location)!);
  const { capacity, allocatable } = offered[available.indexOf(chosen!)]!;
  return { serverType: chosen!.type, location: chosen!.location, price: priceIn(chosen!.type, chosen!.location)!, capacity, allocatable };
}
