/**
 * The scaling API's server-type catalog from live Hetzner Cloud data: server types with prices, and
 * per-location availability from the datacenters list. Read through the service's one counted
 * client (automation/engine/hcloudClient.ts), so the metrics see the API budget these use.
 */
import type { HcloudClient, HcloudDatacenter, HcloudServerType } from "../hcloud/hcloudClient";
import type { ServerType, ServerTypePrice } from "./serverTypes";

export interface Offering {
  readonly serverType: string;
  readonly location: string;
}

/**
 * Server types with prices, and the offerings that cannot be bought now: those a location
 * supports but does not sell, and every offering of a deprecated type. Deprecated types stay in
 * the catalog: nodes of theirs still run, and Karpenter marks nodes of a type missing from
 * instance-types as drifted. Also the price of a primary IPv4 per location. Three requests.
 */
export async function hcloudCatalog(
  client: HcloudClient,
): Promise<{ serverTypes: ServerType[]; unavailable: Offering[]; primaryIpv4: ServerTypePrice[] }> {
  const [types, datacenters, pricing] = await Promise.all([client.listServerTypes(), client.listDatacenters(), client.pricing()]);
  const primaryIpv4 = (pricing.primary_ips ?? [])
    .filter((p) => p.type === "ipv4")
    .flatMap((p) => p.prices.map((price) => ({ location: price.location, priceHourlyNet: Number(price.price_hourly.net) })));
  const serverTypes = types.map((t) => ({
    name: t.name,
    architecture: t.architecture,
    cores: t.cores,
    memoryGiB: t.memory,
    diskGB: t.disk,
    cpuType: t.cpu_type,
    prices: t.prices.map((p) => ({ location: p.location, priceHourlyNet: Number(p.price_hourly.net) })),
  }));
  const deprecated = types.filter((t) => t.deprecated).flatMap((t) => t.prices.map((p) => ({ serverType: t.name, location: p.location })));
  return { serverTypes, unavailable: [...unavailableOfferings(types, datacenters), ...deprecated], primaryIpv4 };
}

function unavailableOfferings(types: readonly HcloudServerType[], datacenters: readonly HcloudDatacenter[]): Offering[] {
  const names = new Map(types.map((t) => [t.id, t.name]));
  const available = new Set<string>();
  const supported = new Set<string>();
  for (const dc of datacenters) {
    for (const id of dc.server_types.available) available.add(`${id}@${dc.location.name}`);
    for (const id of dc.server_types.supported) supported.add(`${id}@${dc.location.name}`);
  }
  const out: Offering[] = [];
  for (const key of supported) {
    if (available.has(key)) continue;
    const [id, location] = key.split("@");
    const name = names.get(Number(id));
    if (name && location) out.push({ serverType: name, location });
  }
  return out;
}
