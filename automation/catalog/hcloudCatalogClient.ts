/**
 * The Hetzner Cloud catalog reads of the scaling API: server types with prices, and per-location
 * availability from the datacenters list. (Server look-ups and deletes are in
 * automation/engine/hcloudClient.ts.) Every request is reported to `onRequest` so the metrics count
 * the API budget (3600 requests per hour per project, shared with every `pulumi up`).
 */
import type { ServerType } from "./serverTypes";

interface Pagination {
  meta?: { pagination?: { next_page: number | null } };
}

interface ApiServerType {
  id: number;
  name: string;
  cores: number;
  memory: number;
  disk: number;
  cpu_type: "shared" | "dedicated";
  architecture: "x86" | "arm";
  deprecated?: boolean | null;
  prices: Array<{ location: string; price_hourly: { net: string } }>;
}

interface ApiDatacenter {
  location: { name: string };
  server_types: { supported: number[]; available: number[] };
}

export class HcloudCatalogError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = "HcloudApiError";
  }
}

export class HcloudCatalogClient {
  constructor(
    private readonly token: string,
    private readonly options: {
      readonly baseUrl?: string;
      readonly onRequest?: (operation: string) => void;
      readonly fetch?: typeof fetch;
    } = {},
  ) {}

  private async request<T>(operation: string, method: string, path: string): Promise<T> {
    this.options.onRequest?.(operation);
    const response = await (this.options.fetch ?? fetch)(`${this.options.baseUrl ?? "https://api.hetzner.cloud/v1"}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, accept: "application/json" },
      signal: AbortSignal.timeout(30_000),
    });
    if (response.status === 204) return undefined as T;
    const body = (await response.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
    if (!response.ok) {
      throw new HcloudCatalogError(response.status, body.error?.code ?? "unknown", `Hetzner API ${method} ${path.split("?")[0]}: ${response.status} ${body.error?.message ?? ""}`.trim());
    }
    return body as T;
  }

  private async paged<T>(operation: string, path: string, key: string): Promise<T[]> {
    const items: T[] = [];
    for (let page: number | null = 1; page !== null; ) {
      const sep = path.includes("?") ? "&" : "?";
      const body: Pagination & Record<string, T[]> = await this.request<Pagination & Record<string, T[]>>(operation, "GET", `${path}${sep}page=${page}&per_page=50`);
      items.push(...(body[key] ?? []));
      page = body.meta?.pagination?.next_page ?? null;
    }
    return items;
  }

  /**
   * Server types with prices, and the offerings that cannot be bought now: those a location
   * supports but does not sell, and every offering of a deprecated type. Deprecated types stay in
   * the catalog: nodes of theirs still run, and Karpenter marks nodes of a type missing from
   * instance-types as drifted. Two requests.
   */
  async catalog(): Promise<{ serverTypes: ServerType[]; unavailable: Array<{ serverType: string; location: string }> }> {
    const [types, datacenters] = await Promise.all([
      this.paged<ApiServerType>("list_server_types", "/server_types", "server_types"),
      this.paged<ApiDatacenter>("list_datacenters", "/datacenters", "datacenters"),
    ]);
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
    return { serverTypes, unavailable: [...unavailableOfferings(types, datacenters), ...deprecated] };
  }
}

function unavailableOfferings(types: readonly ApiServerType[], datacenters: readonly ApiDatacenter[]): Array<{ serverType: string; location: string }> {
  const names = new Map(types.map((t) => [t.id, t.name]));
  const available = new Set<string>();
  const supported = new Set<string>();
  for (const dc of datacenters) {
    for (const id of dc.server_types.available) available.add(`${id}@${dc.location.name}`);
    for (const id of dc.server_types.supported) supported.add(`${id}@${dc.location.name}`);
  }
  const out: Array<{ serverType: string; location: string }> = [];
  for (const key of supported) {
    if (available.has(key)) continue;
    const [id, location] = key.split("@");
    const name = names.get(Number(id));
    if (name && location) out.push({ serverType: name, location });
  }
  return out;
}
