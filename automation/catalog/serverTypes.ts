/**
 * Hetzner Cloud server types and their per-location prices: the shipped catalog
 * (`hcloudCatalog.json`, used by the simulated engine and offline) and the shape live data from the
 * Hetzner API is mapped into (see hcloudClient.ts).
 */
import shipped from "./hcloudCatalog.json";

export interface ServerTypePrice {
  /** Hetzner location name (`hel1`): the node's topology.kubernetes.io/zone. */
  readonly location: string;
  /** EUR per hour, net (without VAT). */
  readonly priceHourlyNet: number;
}

export interface ServerType {
  readonly name: string;
  readonly architecture: "x86" | "arm";
  readonly cores: number;
  readonly memoryGiB: number;
  readonly diskGB: number;
  readonly cpuType: "shared" | "dedicated";
  /** Locations where the type is sold, with its price there. A location missing here does not offer it. */
  readonly prices: readonly ServerTypePrice[];
}

export interface ServerTypeCatalog {
  /** Where the figures come from (the shipped file, or the live API and when). */
  readonly source: string;
  readonly serverTypes: readonly ServerType[];
  /**
   * What a primary IPv4 costs per location (Hetzner bills one with every server that has a public
   * IPv4; `GET /pricing`, `primary_ips[type=ipv4].prices`). Offers of pools with `publicIpv4`
   * include it. Absent: unknown, offers show the server alone.
   */
  readonly primaryIpv4?: readonly ServerTypePrice[];
}

/** The hourly price of a primary IPv4 in a location, else the lowest known elsewhere, else 0. */
export function primaryIpv4Price(catalog: Pick<ServerTypeCatalog, "primaryIpv4">, location: string): number {
  const prices = catalog.primaryIpv4 ?? [];
  const here = prices.find((p) => p.location === location)?.priceHourlyNet;
  return here ?? (prices.length > 0 ? Math.min(...prices.map((p) => p.priceHourlyNet)) : 0);
}

export function shippedCatalog(): ServerTypeCatalog {
  return shipped as ServerTypeCatalog;
}

export function findServerType(catalog: ServerTypeCatalog, name: string): ServerType | undefined {
  return catalog.serverTypes.find((t) => t.name === name);
}

/** Kubernetes `kubernetes.io/arch` of a Hetzner architecture. */
export function kubernetesArch(architecture: ServerType["architecture"]): "amd64" | "arm64" {
  return architecture === "arm" ? "arm64" : "amd64";
}
