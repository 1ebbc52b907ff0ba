/**
 * The orphan reclaimer: servers labelled with the cluster that neither the store (no claim for
 * their node) nor git's stack (no static pool of theirs) knows are deleted once they are older
 * than a grace period (default 30 min), which covers a server created by a run whose claim and
 * state write were lost in a crash. A dry-run setting only reports. Every decision is logged and
 * counted in `nodefleet_orphan_servers_total{cluster,action}`.
 */
import type { Logger } from "pino";
import type { HcloudClient } from "../hcloud/hcloudClient";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import type { SimulatedCloud } from "../simulated/simulatedCloud";
import { errorMessage } from "../../components/shared/errorMessage";

export interface InventoryServer {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly createdAt: string;
}

export interface ServerInventory {
  /** One label-selector list call. */
  listClusterServers(clusterId: string): Promise<InventoryServer[]>;
  deleteServer(id: string): Promise<void>;
}

export function hcloudInventory(client: HcloudClient): ServerInventory {
  return {
    async listClusterServers(clusterId) {
      const servers = await client.listServers({ labelSelector: `${OWNERSHIP_LABELS.cluster}=${clusterId}` });
      return servers.map((s) => ({ id: String(s.id), name: s.name, labels: s.labels, createdAt: s.created }));
    },
    deleteServer: (id) => client.deleteServer(Number(id)),
  };
}

/** The counter of cloud API calls (api/serviceMetrics.ts `ServiceMetrics` is one). */
export interface CloudRequestCounter {
  cloudRequest(provider: string, operation: string): void;
}

/** The counter of the reclaimer's decisions, by cluster and action (api/serviceMetrics.ts `ServiceMetrics` has it). */
export interface OrphanMetrics {
  readonly orphanDecisions: { inc(labels: { cluster: string; action: OrphanAction }): void };
}

/** The simulated cloud as an inventory; its calls are counted as provider `simulated`. */
export function simulatedInventory(cloud: SimulatedCloud, metrics?: CloudRequestCounter): ServerInventory {
  return {
    async listClusterServers(clusterId) {
      metrics?.cloudRequest("simulated", "list_servers");
      return cloud
        .listServers(`${OWNERSHIP_LABELS.cluster}=${clusterId}`)
        .filter((s) => s.provider === "hcloud")
        .map((s) => ({ id: s.id, name: s.name, labels: s.labels, createdAt: s.createdAt }));
    },
    async deleteServer(id) {
      metrics?.cloudRequest("simulated", "delete_server");
      cloud.deleteServer(id);
    },
  };
}

export type OrphanAction = "waiting" | "deleted" | "dry-run" | "failed";

export interface OrphanDecision {
  readonly server: InventoryServer;
  readonly action: OrphanAction;
  readonly reason: string;
}

/** Servers neither the store nor git's stack knows. */
export function findOrphans(
  servers: readonly InventoryServer[],
  knownNodes: ReadonlySet<string>,
  staticPools: ReadonlySet<string>,
): InventoryServer[] {
  return servers.filter((s) => {
    const node = s.labels[OWNERSHIP_LABELS.node];
    const pool = s.labels[OWNERSHIP_LABELS.pool];
    if (pool !== undefined && staticPools.has(pool)) return false;
    return node === undefined || !knownNodes.has(node);
  });
}

export interface OrphanReclaimerOptions {
  readonly clusterId: string;
  readonly inventory: ServerInventory;
  /** Age (since creation and since first seen unknown) before deleting; default 30 min. */
  readonly graceMs?: number;
  /** Sweep interval; default 5 min (one list request each: 12 an hour). */
  readonly intervalMs?: number;
  readonly dryRun?: boolean;
  readonly metrics?: OrphanMetrics;
  readonly logger?: Logger;
  /** The cloud the servers are in, in logs (default `hcloud`). */
  readonly cloud?: string;
  readonly now?: () => number;
}

export class OrphanReclaimer {
  /** Node ids the store holds claims for (any status but GONE), or that are known otherwise; a failure skips the sweep. */
  knownNodes: () => ReadonlySet<string> | Promise<ReadonlySet<string>> = () => new Set();
  /** Names of git's static pools (their servers belong to git's stack). */
  staticPools: () => ReadonlySet<string> = () => new Set();
  private readonly firstSeen = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<OrphanDecision[]> | undefined;

  constructor(private readonly options: OrphanReclaimerOptions) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  async sweep(): Promise<OrphanDecision[]> {
    const { clusterId, inventory, logger, metrics } = this.options;
    const grace = this.options.graceMs ?? 30 * 60_000;
    const servers = await inventory.listClusterServers(clusterId);
    // Read after listing: a claim admitted during the list call is known here.
    const orphans = findOrphans(servers, await this.knownNodes(), this.staticPools());
    const now = this.now();
    const orphanIds = new Set(orphans.map((s) => s.id));
    for (const id of [...this.firstSeen.keys()]) if (!orphanIds.has(id)) this.firstSeen.delete(id);
    const decisions: OrphanDecision[] = [];
    for (const server of orphans) {
      const seen = this.firstSeen.get(server.id) ?? now;
      this.firstSeen.set(server.id, seen);
      const since = Math.max(Date.parse(server.createdAt) || now, seen);
      let decision: OrphanDecision;
      if (now - since < grace) {
        decision = { server, action: "waiting", reason: `unknown server, within the grace period of ${Math.round(grace / 1000)} s` };
      } else if (this.options.dryRun) {
        decision = { server, action: "dry-run", reason: "unknown server past the grace period; dry run, not deleted" };
      } else {
        try {
          await inventory.deleteServer(server.id);
          this.firstSeen.delete(server.id);
          decision = { server, action: "deleted", reason: "unknown server past the grace period" };
        } catch (error) {
          decision = { server, action: "failed", reason: `delete failed: ${errorMessage(error)}` };
        }
      }
      metrics?.orphanDecisions.inc({ cluster: clusterId, action: decision.action });
      logger?.[decision.action === "waiting" ? "info" : "warn"](
        {
          cluster: clusterId,
          cloud: this.options.cloud ?? "hcloud",
          serverId: server.id,
          serverName: server.name,
          action: decision.action,
        },
        `orphan reclaimer: ${decision.reason}`,
      );
      decisions.push(decision);
    }
    return decisions;
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      if (this.sweeping) return;
      this.sweeping = this.sweep()
        .catch((error: unknown) => {
          this.options.logger?.warn({ err: errorMessage(error) }, "orphan sweep failed");
          return [];
        })
        .finally(() => (this.sweeping = undefined));
    };
    this.timer = setInterval(tick, this.options.intervalMs ?? 5 * 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }
}
