/**
 * The fake Hetzner Cloud's state: servers and actions with the API's own field names, persisted
 * atomically in the data directory so a restarted local cloud keeps its machines. Catalog objects
 * (server types, locations, datacenters, images) are derived from the shipped catalog, in the
 * shape the API returns them.
 */
import { existsSync, readFileSync } from "node:fs";
import { HCLOUD_LOCATION_ZONES } from "../../../components/fleet/hcloudLocations";
import { shippedCatalog } from "../../catalog/serverTypes";
import { writeFileAtomic } from "../../simulated/simulatedCloud";

export interface FakeServer {
  id: number;
  name: string;
  status: "initializing" | "starting" | "running" | "off" | "deleting";
  created: string;
  labels: Record<string, string>;
  serverType: string;
  location: string;
  image: string;
  userData: string;
  ipv4: string;
  networks: number[];
  firewalls: number[];
  placementGroup: number | null;
  deleteProtection: boolean;
  rebuildProtection: boolean;
}

export interface FakeAction {
  id: number;
  command: string;
  resources: Array<{ id: number; type: string }>;
  started: string;
  /** Epoch ms at which the action completes. */
  finishesAt: number;
}

/** A network, firewall, placement group or SSH key: its API fields, kept as the API returns them. */
export interface FakeObject {
  id: number;
  name: string;
  labels: Record<string, string>;
  created: string;
  [field: string]: unknown;
}

interface Persisted {
  nextId: number;
  servers: FakeServer[];
  actions: FakeAction[];
  objects?: Record<string, FakeObject[]>;
}

const CITIES: Record<string, [string, string, number, number]> = {
  fsn1: ["DE", "Falkenstein", 50.47612, 12.370071],
  nbg1: ["DE", "Nuremberg", 49.452102, 11.076665],
  hel1: ["FI", "Helsinki", 60.169855, 24.938379],
  ash: ["US", "Ashburn, VA", 39.043757, -77.487442],
  hil: ["US", "Hillsboro, OR", 45.54222, -122.951924],
  sin: ["SG", "Singapore", 1.283333, 103.833333],
};

export class FakeHcloudState {
  private state: Persisted;

  constructor(private readonly file: string) {
    this.state = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Persisted) : { nextId: 1000, servers: [], actions: [] };
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify(this.state));
  }

  newId(): number {
    this.state.nextId += 1;
    return this.state.nextId;
  }

  get servers(): readonly FakeServer[] {
    return this.state.servers;
  }

  server(id: number): FakeServer | undefined {
    return this.state.servers.find((s) => s.id === id);
  }

  addServer(server: FakeServer): void {
    this.state.servers.push(server);
    this.save();
  }

  removeServer(id: number): void {
    this.state.servers = this.state.servers.filter((s) => s.id !== id);
    this.save();
  }

  objects(kind: string): readonly FakeObject[] {
    return this.state.objects?.[kind] ?? [];
  }

  /** Adds or replaces (by id) an object of `kind`. */
  putObject(kind: string, object: FakeObject): void {
    const objects = (this.state.objects ??= {});
    objects[kind] = [...(objects[kind] ?? []).filter((o) => o.id !== object.id), object];
    this.save();
  }

  removeObject(kind: string, id: number): void {
    const objects = (this.state.objects ??= {});
    objects[kind] = (objects[kind] ?? []).filter((o) => o.id !== id);
    this.save();
  }

  action(id: number): FakeAction | undefined {
    return this.state.actions.find((a) => a.id === id);
  }

  addAction(command: string, resources: FakeAction["resources"], durationMs: number): FakeAction {
    const action = { id: this.newId(), command, resources, started: new Date().toISOString(), finishesAt: Date.now() + durationMs };
    this.state.actions.push(action);
    this.save();
    return action;
  }
}

export function serverTypeNames(): string[] {
  return shippedCatalog().serverTypes.map((t) => t.name);
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
      price_hourly: { net: p.priceHourlyNet.toFixed(4), gross: (p.priceHourlyNet * 1.19).toFixed(4) },
      price_monthly: { net: (p.priceHourlyNet * 730).toFixed(4), gross: (p.priceHourlyNet * 730 * 1.19).toFixed(4) },
      included_traffic: 21990232555520,
      price_per_tb_traffic: { net: "1.0000", gross: "1.1900" },
    })),
    storage_type: "local",
    cpu_type: t.cpuType,
    architecture: t.architecture,
    include_traffic: 21990232555520,
  };
}

export function locationNames(): string[] {
  return Object.keys(HCLOUD_LOCATION_ZONES);
}

export function locationJson(name: string): Record<string, unknown> | undefined {
  const city = CITIES[name];
  if (!city) return undefined;
  return { id: locationNames().indexOf(name) + 1, name, description: `${city[1]} DC Park 1`, country: city[0], city: city[1], latitude: city[2], longitude: city[3], network_zone: HCLOUD_LOCATION_ZONES[name] };
}

/** One datacenter per location, `<location>-dc1`, selling every catalog type priced there. */
export function datacenterJson(location: string, soldOut: ReadonlySet<string>): Record<string, unknown> | undefined {
  const loc = locationJson(location);
  if (!loc) return undefined;
  const supported = shippedCatalog().serverTypes.map((t, i) => ({ t, id: i + 1 })).filter(({ t }) => t.prices.some((p) => p.location === location));
  return {
    id: Number(loc.id),
    name: `${location}-dc1`,
    description: `${String(loc.city)} 1 virtual DC 1`,
    location: loc,
    server_types: {
      supported: supported.map((s) => s.id),
      available: supported.filter(({ t }) => !soldOut.has(t.name)).map((s) => s.id),
      available_for_migration: supported.map((s) => s.id),
    },
  };
}

export function imageJson(name: string): Record<string, unknown> {
  const [flavor, version] = name.split("-");
  return {
    id: 114690387,
    type: "system",
    status: "available",
    name,
    description: name,
    image_size: null,
    disk_size: 5,
    created: "2024-04-25T12:00:00Z",
    created_from: null,
    bound_to: null,
    os_flavor: flavor ?? "ubuntu",
    os_version: version ?? null,
    rapid_deploy: true,
    protection: { delete: false },
    deprecated: null,
    deleted: null,
    labels: {},
    architecture: "x86",
  };
}
