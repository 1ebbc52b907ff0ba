/**
 * A small typed client for the few Hetzner Cloud API calls nodefleet itself makes (crash recovery
 * look-ups by name and labels, orphan deletes, the scaling API's server-type catalog, the shared
 * network and firewall of each batch, the local cloud's SSH key). Every request
 * is counted: the project's budget of 3600 requests per hour is shared with every `pulumi up`.
 */
import { fetchFailureCause } from "../../components/shared/fetchFailureCause";

export interface HcloudServer {
  readonly id: number;
  readonly name: string;
  readonly status: string;
  readonly created: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly server_type: { readonly name: string };
  readonly public_net: { readonly ipv4: { readonly ip: string } | null; readonly ipv6: { readonly ip: string } | null };
  readonly private_net: ReadonlyArray<{ readonly network: number; readonly ip: string }>;
}

/** A network or firewall as the service looks it up: by name, with the labels that say whose it is. */
export interface HcloudLabelledResource {
  readonly id: number;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** The part of `GET /pricing` the catalog reads: primary IP prices per location. */
/** The fields of an image the scaling API reads. */
export interface HcloudImage {
  readonly id: number;
  readonly architecture: string;
  readonly created: string;
}

export interface HcloudPricing {
  readonly primary_ips?: ReadonlyArray<{
    readonly type: string;
    readonly prices: ReadonlyArray<{ readonly location: string; readonly price_hourly: { readonly net: string } }>;
  }>;
}

export interface HcloudServerType {
  readonly id: number;
  readonly name: string;
  readonly cores: number;
  /** GiB. */
  readonly memory: number;
  /** GB. */
  readonly disk: number;
  readonly cpu_type: "shared" | "dedicated";
  readonly architecture: "x86" | "arm";
  readonly deprecated?: boolean | null;
  readonly prices: ReadonlyArray<{ readonly location: string; readonly price_hourly: { readonly net: string } }>;
}

export interface HcloudDatacenter {
  readonly location: { readonly name: string };
  /** Server type ids. */
  readonly server_types: { readonly supported: readonly number[]; readonly available: readonly number[] };
}

export class HcloudApiError extends Error {
  override readonly name = "HcloudApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** `GET https://api.hetzner.cloud/v1/servers`: the call that was answered so. */
    readonly endpoint?: string,
  ) {
    super(`Hetzner Cloud API ${status} ${code}: ${message}${endpoint ? ` (${endpoint})` : ""}`);
  }
}

/**
 * A call to the Hetzner Cloud API that got no usable answer: no connection, a reset, a DNS
 * failure, no answer in time, an answer cut short or not JSON. Names the call and the cause, where
 * fetch itself says only "fetch failed".
 */
export class HcloudRequestError extends Error {
  override readonly name = "HcloudRequestError";
  constructor(
    /** `GET https://api.hetzner.cloud/v1/servers` (the query string left out). */
    readonly endpoint: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Hetzner Cloud API ${endpoint} failed: ${reason}`, options);
  }
}

/** Why a fetch, or the reading of its answer, failed, in words: the cause fetch keeps to itself, a timeout. */
function failureReason(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`;
  if (error instanceof Error && error.name === "AbortError") return "the request was aborted";
  const cause = fetchFailureCause(error);
  if (cause) return cause;
  return error instanceof Error ? error.message || error.name : String(error);
}

const DEFAULT_TIMEOUT_MS = 30_000;

export interface HcloudClientOptions {
  readonly token: string;
  /** Default https://api.hetzner.cloud/v1. */
  readonly baseUrl?: string;
  readonly fetch?: typeof fetch;
  /** Called once per HTTP request (for the service's request counter). */
  readonly onRequest?: (method: string, path: string) => void;
  /** How long one request may take, answer included; default 30 s. */
  readonly timeoutMs?: number;
}

export class HcloudClient {
  private requests = 0;
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: HcloudClientOptions) {
    this.baseUrl = (options.baseUrl ?? "https://api.hetzner.cloud/v1").replace(/\/$/, "");
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** From HCLOUD_TOKEN, or undefined when no token is configured. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, onRequest?: HcloudClientOptions["onRequest"]): HcloudClient | undefined {
    // HCLOUD_ENDPOINT is the hcloud provider's own setting: the service talks to the same API it does.
    return env.HCLOUD_TOKEN
      ? new HcloudClient({ token: env.HCLOUD_TOKEN, onRequest, ...(env.HCLOUD_ENDPOINT ? { baseUrl: env.HCLOUD_ENDPOINT } : {}) })
      : undefined;
  }

  get requestCount(): number {
    return this.requests;
  }

  private async request<T>(method: string, path: string, payload?: unknown): Promise<T | undefined> {
    this.requests += 1;
    this.options.onRequest?.(method, path);
    // The token travels in a header, never in the URL: the endpoint (without any user:password@) may be named in any message.
    const endpoint = `${method} ${this.baseUrl.replace(/\/\/[^/@]*@/, "//")}${path.split("?")[0]}`;
    const timeoutMs = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let response: Response;
    let text: string;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${this.options.token}`,
          Accept: "application/json",
          ...(payload === undefined ? {} : { "Content-Type": "application/json" }),
        },
        ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
        // A stalled connection must not hold up recovery or the catalog refresh for ever.
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      throw new HcloudRequestError(endpoint, failureReason(error, timeoutMs), { cause: error });
    }
    if (response.status === 204) return undefined;
    let body: ({ error?: { code?: string; message?: string } } & T) | undefined;
    try {
      body = JSON.parse(text) as { error?: { code?: string; message?: string } } & T;
    } catch {
      body = undefined;
    }
    if (!response.ok)
      throw new HcloudApiError(response.status, body?.error?.code ?? "unknown", body?.error?.message ?? response.statusText, endpoint);
    // A 2xx without a JSON answer is no answer: an empty list read from it would hide servers.
    if (body === undefined || body === null || typeof body !== "object")
      throw new HcloudRequestError(endpoint, `HTTP ${response.status} with an answer that is not a JSON object`);
    return body;
  }

  /** Every item of a paged list (one request per 50 items). */
  private async paged<T>(path: string, key: string, query: Record<string, string> = {}): Promise<T[]> {
    const items: T[] = [];
    for (let page = 1; ; page++) {
      const params = new URLSearchParams({ page: String(page), per_page: "50", ...query });
      const body = await this.request<Record<string, T[] | undefined> & { meta?: { pagination?: { next_page: number | null } } }>(
        "GET",
        `${path}?${params}`,
      );
      items.push(...(body?.[key] ?? []));
      if (!body?.meta?.pagination?.next_page) return items;
    }
  }

  /** Servers by exact name and/or label selector (one request per 50 servers). */
  async listServers(filter: { name?: string; labelSelector?: string }): Promise<HcloudServer[]> {
    return this.paged<HcloudServer>("/servers", "servers", {
      ...(filter.name ? { name: filter.name } : {}),
      ...(filter.labelSelector ? { label_selector: filter.labelSelector } : {}),
    });
  }

  /** The network of this exact name, if there is one (one request). */
  async findNetwork(name: string): Promise<HcloudLabelledResource | undefined> {
    return (await this.paged<HcloudLabelledResource>("/networks", "networks", { name }))[0];
  }

  /** The firewall of this exact name, if there is one (one request). */
  async findFirewall(name: string): Promise<HcloudLabelledResource | undefined> {
    return (await this.paged<HcloudLabelledResource>("/firewalls", "firewalls", { name }))[0];
  }

  /** The SSH key of this exact name, if there is one (one request). */
  async findSshKey(name: string): Promise<HcloudLabelledResource | undefined> {
    return (await this.paged<HcloudLabelledResource>("/ssh_keys", "ssh_keys", { name }))[0];
  }

  /** Uploads an SSH public key under `name` (the local cloud's, as a user uploads theirs). */
  async createSshKey(name: string, publicKey: string): Promise<void> {
    await this.request("POST", "/ssh_keys", { name, public_key: publicKey });
  }

  /**
   * The newest image (by `created`) matching a label selector for one architecture, or undefined
   * when none does (one request): GET /images with label_selector, architecture and sort=created:desc,
   * the filters Hetzner documents for listing images (docs.hetzner.cloud, "List Images").
   */
  async newestImage(labelSelector: string, architecture: "x86" | "arm"): Promise<HcloudImage | undefined> {
    // status=available: a snapshot still being taken cannot boot a server yet.
    const params = new URLSearchParams({
      label_selector: labelSelector,
      architecture,
      status: "available",
      sort: "created:desc",
      page: "1",
      per_page: "1",
    });
    return (await this.request<{ images?: HcloudImage[] }>("GET", `/images?${params}`))?.images?.[0];
  }

  /** Every server type with its prices per location, deprecated ones included. */
  async listServerTypes(): Promise<HcloudServerType[]> {
    return this.paged<HcloudServerType>("/server_types", "server_types");
  }

  /** Hetzner's price list; the catalog reads what a primary IPv4 costs per location from it. */
  async pricing(): Promise<HcloudPricing> {
    return (await this.request<{ pricing: HcloudPricing }>("GET", "/pricing"))?.pricing ?? {};
  }

  /** Every datacenter with the server types it supports and those it sells now. */
  async listDatacenters(): Promise<HcloudDatacenter[]> {
    return this.paged<HcloudDatacenter>("/datacenters", "datacenters");
  }

  /** Deletes a server; "not found" counts as success (it is gone either way). */
  async deleteServer(id: number): Promise<void> {
    try {
      await this.request("DELETE", `/servers/${id}`);
    } catch (error) {
      if (error instanceof HcloudApiError && error.status === 404) return;
      throw error;
    }
  }
}
