/**
 * The fake Hetzner Cloud's catalog, in the shape the API returns it: server types, locations and
 * datacenters derived from the shipped catalog, the system images servers boot from (one per name
 * and architecture, as Hetzner publishes them) and the price list.
 */
import { HCLOUD_LOCATION_ZONES } from "../../../components/fleet/hcloudLocations";
import { shippedCatalog } from "../../catalog/serverTypes";

const CITIES: Record<string, [string, string, number, number]> = {
  fsn1: ["DE", "Falkenstein", 50.47612, 12.370071],
  nbg1: ["DE", "Nuremberg", 49.452102, 11.076665],
  hel1: ["FI", "Helsinki", 60.169855, 24.938379],
  ash: ["US", "Ashburn, VA", 39.043757, -77.487442],
  hil: ["US", "Hillsboro, OR", 45.54222, -122.951924],
  sin: ["SG", "Singapore", 1.283333, 103.833333],
};

/** Germany's VAT, which Hetzner's gross prices include. */
const VAT = 0.19;
const INCLUDED_TRAFFIC_BYTES = 21990232555520;

function price(net: number): { net: string; gross: string } {
  return { net: net.toFixed(4), gross: (net * (1 + VAT)).toFixed(4) };
}

export function serverTypeNames(): string[] {
  return shippedCatalog().serverTypes.map((t) => t.name);
}

/** A server type's name from an id or name as the API accepts them ("cx22", 3 or "3"). */
export function serverTypeName(idOrName: unknown): string | undefined {
  const types = shippedCatalog().serverTypes;
  if (typeof idOrName === "number" || (typeof idOrName === "string" && /^\d+$/.test(idOrName))) return types[Number(idOrName) - 1]?.name;
  return typeof idOrName === "string" ? types.find((t) => t.name === idOrName)?.name : undefined;
}

export function serverTypeJson(name: string): Record<string, unknown> | undefined {
  const index = shippedCatalog().serverTypes.findIndex((t) => t.name === name);
  if (index < 0) return undefined;
  const t = shippedCatalog().serverTypes[index]!;
  return {
    id: index + 1,
    name: t.name,
    description: t.name.toUpperCase(),
    cores: t.cores,
    memory: t.memoryGiB,
    disk: t.diskGB,
    deprecated: false,
    deprecation: null,
    prices: t.prices.map((p) => ({
      location: p.location,
      price_hourly: price(p.priceHourlyNet),
      price_monthly: price(p.priceHourlyNet * 730),
      included_traffic: INCLUDED_TRAFFIC_BYTES,
      price_per_tb_traffic: price(1),
    })),
    storage_type: "local",
    cpu_type: t.cpuType,
    category: t.cpuType === "dedicated" ? "general_purpose" : "cost_optimized",
    architecture: t.architecture,
    include_traffic: INCLUDED_TRAFFIC_BYTES,
    included_traffic: INCLUDED_TRAFFIC_BYTES,
    // Where the type is offered (hcloud-go's ServerType.Locations).
    locations: t.prices
      .filter((p) => locationJson(p.location))
      .map((p) => ({ id: Number(locationJson(p.location)!.id), name: p.location, deprecation: null })),
  };
}

export function locationNames(): string[] {
  return Object.keys(HCLOUD_LOCATION_ZONES);
}

/** A location's name from an id or name as the API accepts them ("hel1" or "3"). */
export function locationName(idOrName: unknown): string | undefined {
  const names = locationNames();
  if (typeof idOrName === "number" || (typeof idOrName === "string" && /^\d+$/.test(idOrName))) return names[Number(idOrName) - 1];
  return typeof idOrName === "string" && names.includes(idOrName) ? idOrName : undefined;
}

export function locationJson(name: string): Record<string, unknown> | undefined {
  const city = CITIES[name];
  if (!city) return undefined;
  return {
    id: locationNames().indexOf(name) + 1,
    name,
    description: `${city[1]} DC Park 1`,
    country: city[0],
    city: city[1],
    latitude: city[2],
    longitude: city[3],
    network_zone: HCLOUD_LOCATION_ZONES[name],
  };
}

/**
 * Whether `serverType` is sold out in `location`: NODEFLEET_SIM_OUT_OF_STOCK names it alone (sold
 * out everywhere) or as `<type>@<location>` (there only, for a pool's fallback to another location).
 */
export function soldOutIn(soldOut: ReadonlySet<string>, serverType: string, location: string): boolean {
  return soldOut.has(serverType) || soldOut.has(`${serverType}@${location}`);
}

/** One datacenter per location, `<location>-dc1`, selling every catalog type priced there. */
export function datacenterJson(location: string, soldOut: ReadonlySet<string>): Record<string, unknown> | undefined {
  const loc = locationJson(location);
  if (!loc) return undefined;
  const supported = shippedCatalog()
    .serverTypes.map((t, i) => ({ t, id: i + 1 }))
    .filter(({ t }) => t.prices.some((p) => p.location === location));
  return {
    id: Number(loc.id),
    name: `${location}-dc1`,
    description: `${String(loc.city)} 1 virtual DC 1`,
    location: loc,
    server_types: {
      supported: supported.map((s) => s.id),
      available: supported.filter(({ t }) => !soldOutIn(soldOut, t.name, location)).map((s) => s.id),
      available_for_migration: supported.map((s) => s.id),
    },
  };
}

export type Architecture = "x86" | "arm";

export interface FakeImage {
  readonly id: number;
  readonly name: string;
  readonly osFlavor: "ubuntu" | "debian";
  readonly osVersion: string;
  readonly architecture: Architecture;
}

const IMAGE_NAMES: ReadonlyArray<[string, FakeImage["osFlavor"], string]> = [
  ["ubuntu-24.04", "ubuntu", "24.04"],
  ["ubuntu-22.04", "ubuntu", "22.04"],
  ["debian-12", "debian", "12"],
  ["debian-13", "debian", "13"],
];

/** System images, one per name and architecture like Hetzner's (ids are the fake's own). */
export const FAKE_IMAGES: readonly FakeImage[] = IMAGE_NAMES.flatMap(([name, osFlavor, osVersion], i) =>
  (["x86", "arm"] as const).map((architecture, j) => ({ id: 100 + i * 2 + j, name, osFlavor, osVersion, architecture })),
);

/** The image a server of `architecture` boots from an id or name, or undefined (also for another architecture's id). */
export function findImage(idOrName: unknown, architecture: string): FakeImage | undefined {
  const byId = typeof idOrName === "number" || (typeof idOrName === "string" && /^\d+$/.test(idOrName));
  return FAKE_IMAGES.find((i) => (byId ? i.id === Number(idOrName) : i.name === idOrName) && i.architecture === architecture);
}

export function imageJson(image: FakeImage): Record<string, unknown> {
  return {
    id: image.id,
    type: "system",
    status: "available",
    name: image.name,
    description: `${image.osFlavor === "ubuntu" ? "Ubuntu" : "Debian"} ${image.osVersion}`,
    image_size: null,
    disk_size: 5,
    created: "2024-04-25T12:00:00Z",
    created_from: null,
    bound_to: null,
    os_flavor: image.osFlavor,
    os_version: image.osVersion,
    rapid_deploy: true,
    protection: { delete: false },
    deprecated: null,
    deleted: null,
    labels: {},
    architecture: image.architecture,
  };
}

/** `GET /pricing`: server types from the catalog, the other products at constant prices. */
export function pricingJson(): Record<string, unknown> {
  const locations = locationNames();
  const perLocation = (monthly: number, hourly?: number) =>
    locations.map((location) => ({
      location,
      ...(hourly === undefined ? {} : { price_hourly: price(hourly) }),
      price_monthly: price(monthly),
    }));
  return {
    currency: "EUR",
    vat_rate: (VAT * 100).toFixed(2),
    image: { price_per_gb_month: price(0.011) },
    floating_ip: { price_monthly: price(3) },
    floating_ips: [
      { type: "ipv4", prices: perLocation(3) },
      { type: "ipv6", prices: perLocation(3) },
    ],
    primary_ips: [
      { type: "ipv4", prices: perLocation(0.5, 0.0008) },
      { type: "ipv6", prices: perLocation(0, 0) },
    ],
    traffic: { price_per_tb: price(1) },
    server_backup: { percentage: "20.00" },
    volume: { price_per_gb_month: price(0.044) },
    server_types: serverTypeNames().map((name) => {
      const t = serverTypeJson(name)!;
      return { id: t.id, name, prices: t.prices };
    }),
    load_balancer_types: [
      {
        id: 1,
        name: "lb11",
        prices: perLocation(5.39, 0.0086).map((p) => ({ ...p, included_traffic: INCLUDED_TRAFFIC_BYTES, price_per_tb_traffic: price(1) })),
      },
    ],
  };
}
