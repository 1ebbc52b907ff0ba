/**
 * Where learned node capacity is kept (the learned_capacities table): per cluster, server type,
 * image and kubelet settings, the smallest capacity and allocatable registered Nodes reported, so
 * a restarted service offers what it learned before. A write can only lower a value (SQL min), so
 * no order of observations raises an offer. Reads come from memory: every instance-type listing
 * looks these up.
 */
import type { NodeResources } from "../../components/bootstrap/kubeletReservations";
import type { Db } from "./database";
import { walSyncOf } from "./walSync";

export interface LearnedKey {
  readonly serverType: string;
  readonly image: string;
  /** The kubelet settings' fingerprint (catalog/learnedCapacity.ts kubeletFingerprint). */
  readonly kubelet: string;
}

export interface LearnedEntry {
  readonly key: LearnedKey;
  readonly capacity: NodeResources;
  readonly allocatable: NodeResources;
  /** The Node that taught the first values. */
  readonly firstNode: string;
  readonly learnedAt: string;
  readonly updatedAt: string;
}

interface Row {
  server_type: string;
  image: string;
  kubelet: string;
  capacity_cpu_millis: number;
  capacity_memory_mib: number;
  capacity_pods: number;
  capacity_ephemeral_storage_mib: number;
  allocatable_cpu_millis: number;
  allocatable_memory_mib: number;
  allocatable_pods: number;
  allocatable_ephemeral_storage_mib: number;
  first_node: string;
  learned_at: string;
  updated_at: string;
}

function keyText(key: LearnedKey): string {
  return JSON.stringify([key.serverType, key.image, key.kubelet]);
}

function entryOf(row: Row): LearnedEntry {
  return {
    key: { serverType: row.server_type, image: row.image, kubelet: row.kubelet },
    capacity: {
      cpuMillis: row.capacity_cpu_millis,
      memoryMiB: row.capacity_memory_mib,
      pods: row.capacity_pods,
      ephemeralStorageMiB: row.capacity_ephemeral_storage_mib,
    },
    allocatable: {
      cpuMillis: row.allocatable_cpu_millis,
      memoryMiB: row.allocatable_memory_mib,
      pods: row.allocatable_pods,
      ephemeralStorageMiB: row.allocatable_ephemeral_storage_mib,
    },
    firstNode: row.first_node,
    learnedAt: row.learned_at,
    updatedAt: row.updated_at,
  };
}

const RESOURCE_COLUMNS = [
  "capacity_cpu_millis",
  "capacity_memory_mib",
  "capacity_pods",
  "capacity_ephemeral_storage_mib",
  "allocatable_cpu_millis",
  "allocatable_memory_mib",
  "allocatable_pods",
  "allocatable_ephemeral_storage_mib",
] as const;

const LOWER_SQL = `INSERT INTO learned_capacities (cluster_id, server_type, image, kubelet, ${RESOURCE_COLUMNS.join(", ")}, first_node, learned_at, updated_at)
  VALUES (?, ?, ?, ?, ${RESOURCE_COLUMNS.map(() => "?").join(", ")}, ?, ?, ?)
  ON CONFLICT (cluster_id, server_type, image, kubelet) DO UPDATE SET
  ${RESOURCE_COLUMNS.map((c) => `${c} = min(${c}, excluded.${c})`).join(", ")}, updated_at = excluded.updated_at
  RETURNING *`;

export class LearnedCapacities {
  private readonly cache = new Map<string, Map<string, LearnedEntry>>();

  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private entries(clusterId: string): Map<string, LearnedEntry> {
    let entries = this.cache.get(clusterId);
    if (!entries) {
      const rows = this.db.prepare("SELECT * FROM learned_capacities WHERE cluster_id = ?").all(clusterId) as Row[];
      entries = new Map(rows.map((row) => [keyText(entryOf(row).key), entryOf(row)]));
      this.cache.set(clusterId, entries);
    }
    return entries;
  }

  get(clusterId: string, key: LearnedKey): LearnedEntry | undefined {
    return this.entries(clusterId).get(keyText(key));
  }

  list(clusterId: string): LearnedEntry[] {
    return [...this.entries(clusterId).values()];
  }

  /**
   * Records what `node` reported: each stored value becomes the smaller of it and the reported one.
   * Durable when it returns; answers the entry as stored.
   */
  lower(clusterId: string, key: LearnedKey, reported: Pick<LearnedEntry, "capacity" | "allocatable">, node: string): LearnedEntry {
    const at = this.now().toISOString();
    const { capacity: c, allocatable: a } = reported;
    const row = walSyncOf(this.db).writeDurably(
      () =>
        this.db
          .prepare(LOWER_SQL)
          .get(
            clusterId,
            key.serverType,
            key.image,
            key.kubelet,
            c.cpuMillis,
            c.memoryMiB,
            c.pods,
            c.ephemeralStorageMiB,
            a.cpuMillis,
            a.memoryMiB,
            a.pods,
            a.ephemeralStorageMiB,
            node,
            at,
            at,
          ) as Row,
    );
    const entry = entryOf(row);
    this.entries(clusterId).set(keyText(key), entry);
    return entry;
  }
}
