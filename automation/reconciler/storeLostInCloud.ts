/**
 * The lost-store check against the cloud itself. The file check (storeIntegrity.ts) looks for the
 * API stack's engine state in the data directory, but that state may live elsewhere
 * (NODEFLEET_API_STACK_BACKEND_URL) or be lost together with the whole directory, for example a service
 * rescheduled onto an empty volume. The servers the API created still carry their cluster and pool
 * labels, so when the store is missing or empty one label-selector listing tells a first start from
 * a lost store: a server of the cluster outside git's static pools exists only if a store recorded
 * its claim, and it is exactly what the orphan reclaimer would delete under an empty store.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { fetchFailureCause } from "../../components/shared/fetchFailureCause";
import { HcloudApiError, HcloudRequestError } from "../hcloud/hcloudClient";
import { type ServerInventory, findOrphans } from "./orphanReclaimer";
import { StoreLostError, storeMissingOrEmpty } from "../store/storeIntegrity";
import type { ClaimRepository } from "../store/claimRepository";
import { errorMessage } from "../../components/shared/errorMessage";

/** Names listed in the error before it says how many more there are. */
const NAMES_SHOWN = 5;

export interface CloudCheckOptions {
  /** Pauses before the second and third attempts of a listing that failed for now (429, 5xx, no answer). Default 1 s, 3 s. */
  readonly retryDelaysMs?: readonly number[];
}

/** A failure the next attempt may not meet: Hetzner answering 429 or 5xx, or not answering at all. */
function transient(error: unknown): boolean {
  return !(error instanceof HcloudApiError) || error.status === 429 || error.status >= 500;
}

/** The error's message with its cause (fetch reports only "fetch failed"; the cause says ECONNREFUSED, a timeout...). */
function describe(error: unknown): string {
  // HcloudClient's own errors name the call and the cause already.
  if (error instanceof HcloudRequestError || error instanceof HcloudApiError) return error.message;
  const cause = fetchFailureCause(error);
  return `${errorMessage(error)}${cause ? ` (${cause})` : ""}`;
}

/**
 * Throws StoreLostError when the store `file` is missing or empty while the cloud holds servers of
 * `clusterId` outside `staticPools`; refuses, too, when the cloud cannot be asked then (after
 * retries of a failure that may pass): a start cannot tell a first start from a lost store without
 * it. Asks nothing when the store has data.
 */
export async function assertStoreNotLostInCloud(
  file: string,
  inventory: Pick<ServerInventory, "listClusterServers">,
  clusterId: string,
  staticPools: ReadonlySet<string>,
  options: CloudCheckOptions = {},
): Promise<void> {
  if (!storeMissingOrEmpty(file)) return;
  const created = await serversTheApiCreated(`the store ${file} is missing or empty`, inventory, clusterId, staticPools, options);
  if (created) throw new StoreLostError(file, created);
}

/** The shared database's loss (scale-out mode): no claim of the cluster in it, whatever their status. */
export class SharedClaimsLostError extends Error {
  override readonly name = "SharedClaimsLostError";
  constructor(database: string, clusterId: string, evidence: string) {
    super(
      `the shared database ${database} holds no claim of cluster ${clusterId}, but ${evidence}; starting with no claims would report those servers as gone ` +
        "and reclaim them as orphans. Point NODEFLEET_DATABASE_URL at the database that holds the cluster's claims, or restore it from a backup; " +
        "to give those servers up deliberately, delete them and the API stack's engine state first",
    );
  }
}

/**
 * The same check for the scale-out mode's shared database (`database` names it by host and
 * database, never with its password): a database with no claim of the cluster over servers the API
 * created is a lost or wrong database.
 */
export async function assertSharedClaimsNotLostInCloud(
  claims: Pick<ClaimRepository, "countByStatus">,
  database: string,
  inventory: Pick<ServerInventory, "listClusterServers">,
  clusterId: string,
  staticPools: ReadonlySet<string>,
  options: CloudCheckOptions = {},
): Promise<void> {
  const counts = await claims.countByStatus(clusterId);
  if (Object.values(counts).some((n) => n > 0)) return;
  const what = `the shared database ${database} holds no claim of cluster ${clusterId}`;
  const created = await serversTheApiCreated(what, inventory, clusterId, staticPools, options);
  if (created) throw new SharedClaimsLostError(database, clusterId, created);
}

/**
 * What shows that claims were recorded (servers of the cluster outside git's static pools), or
 * undefined when the cloud has none; `what` says what is missing, for the error when the cloud
 * cannot be asked.
 */
async function serversTheApiCreated(
  what: string,
  inventory: Pick<ServerInventory, "listClusterServers">,
  clusterId: string,
  staticPools: ReadonlySet<string>,
  options: CloudCheckOptions,
): Promise<string | undefined> {
  const delays = options.retryDelaysMs ?? [1000, 3000];
  let servers: Awaited<ReturnType<ServerInventory["listClusterServers"]>> | undefined;
  for (let attempt = 0; servers === undefined; attempt++) {
    try {
      servers = await inventory.listClusterServers(clusterId);
    } catch (error) {
      if (attempt >= delays.length || !transient(error)) {
        throw new Error(
          `${what}, and whether Hetzner Cloud holds servers the API created (a lost store) could not be checked: ` +
            `${describe(error)}; start again once the Hetzner API answers`,
        );
      }
      await sleep(delays[attempt]);
    }
  }
  const created = findOrphans(servers, new Set(), staticPools)
    .map((server) => server.name)
    .sort();
  if (created.length === 0) return undefined;
  const shown =
    created.slice(0, NAMES_SHOWN).join(", ") + (created.length > NAMES_SHOWN ? ` and ${created.length - NAMES_SHOWN} more` : "");
  return `Hetzner Cloud holds ${created.length} server(s) of cluster ${clusterId} outside git's static pools (${shown})`;
}
