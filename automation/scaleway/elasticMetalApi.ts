/**
 * The few Elastic Metal calls the service makes itself: the healer's reboot and the orphan
 * reclaimer's list and delete (https://www.scaleway.com/en/developers/api/elastic-metal/). The
 * secret key goes out as X-Auth-Token and into nothing else; Scaleway's error shape
 * (`{ message, type }`) becomes the error's text.
 */

/** Scaleway's API address, the secret key, and the project whose servers are listed. */
export interface ScalewayAccess {
  readonly apiUrl: string;
  readonly secretKey: string;
  /** Lists only this project's servers (SCW_DEFAULT_PROJECT_ID); without it, every project the key sees. */
  readonly projectId?: string;
}

/** The fields of an Elastic Metal server the service reads. */
export interface ElasticMetalServer {
  readonly id: string;
  readonly name: string;
  readonly zone: string;
  readonly tags: readonly string[];
  readonly createdAt: string;
}

/** Scaleway pages lists by `page` and `page_size` (at most 100), with the whole count in `total_count`. */
const PAGE_SIZE = 100;

export class ElasticMetalApi {
  constructor(
    private readonly access: ScalewayAccess,
    /** Counts each call (the service's cloud request metric). */
    private readonly counted?: (operation: string) => void,
  ) {}

  /** Every server of the zone whose name contains `name` (Scaleway matches substrings) and that has every tag. */
  async listServers(
    zone: string,
    filter: { readonly name?: string; readonly tags?: readonly string[] } = {},
  ): Promise<ElasticMetalServer[]> {
    const servers: ElasticMetalServer[] = [];
    for (let page = 1; ; page++) {
      const query = new URLSearchParams({ page: String(page), page_size: String(PAGE_SIZE) });
      if (filter.name !== undefined) query.set("name", filter.name);
      for (const tag of filter.tags ?? []) query.append("tags", tag);
      if (this.access.projectId) query.set("project_id", this.access.projectId);
      this.counted?.("list_servers");
      const answer = (await this.call("GET", `${this.serversPath(zone)}?${query}`, `listing the Elastic Metal servers of ${zone}`)) as {
        servers?: Array<{ id?: string; name?: string; zone?: string; tags?: string[]; created_at?: string }>;
        total_count?: number;
      };
      const listed = answer.servers ?? [];
      for (const s of listed) {
        if (!s.id) continue;
        servers.push({ id: s.id, name: s.name ?? "", zone: s.zone ?? zone, tags: s.tags ?? [], createdAt: s.created_at ?? "" });
      }
      if (listed.length < PAGE_SIZE || page * PAGE_SIZE >= (answer.total_count ?? 0)) return servers;
    }
  }

  /** A normal reboot of the server. */
  async reboot(zone: string, serverId: string): Promise<void> {
    this.counted?.("reboot_server");
    await this.call("POST", `${this.serversPath(zone)}/${encodeURIComponent(serverId)}/reboot`, `rebooting server ${serverId} in ${zone}`, {
      boot_type: "normal",
    });
  }

  /** Deletes the server (Scaleway detaches its private networks). */
  async deleteServer(zone: string, serverId: string): Promise<void> {
    this.counted?.("delete_server");
    await this.call("DELETE", `${this.serversPath(zone)}/${encodeURIComponent(serverId)}`, `deleting server ${serverId} in ${zone}`);
  }

  private serversPath(zone: string): string {
    return `${this.access.apiUrl.replace(/\/+$/, "")}/baremetal/v1/zones/${encodeURIComponent(zone)}/servers`;
  }

  private async call(method: string, url: string, what: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { "X-Auth-Token": this.access.secretKey };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await response.text();
    if (!response.ok) {
      let message = text.slice(0, 300);
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? message;
      } catch {
        // Not Scaleway's error shape: its text, cut short, is the message.
      }
      throw new Error(`Scaleway answered ${response.status} ${what}: ${message}`);
    }
    return text ? (JSON.parse(text) as unknown) : undefined;
  }
}

/** The service's Scaleway access from SCW_SECRET_KEY, SCW_API_URL and SCW_DEFAULT_PROJECT_ID; undefined without a key. */
export function scalewayAccessFromEnv(env: NodeJS.ProcessEnv): ScalewayAccess | undefined {
  if (!env.SCW_SECRET_KEY) return undefined;
  return {
    apiUrl: env.SCW_API_URL || "https://api.scaleway.com",
    secretKey: env.SCW_SECRET_KEY,
    ...(env.SCW_DEFAULT_PROJECT_ID ? { projectId: env.SCW_DEFAULT_PROJECT_ID } : {}),
  };
}
