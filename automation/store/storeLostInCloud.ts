/**
 * The lost-store check against the cloud itself. The file check (storeIntegrity.ts) looks for the
 * API stack's engine state in the data directory, but that state may live elsewhere
 * (PULUMI_BACKEND_URL) or be lost together with the whole directory, for example a service
 * rescheduled onto an empty volume. The servers the API created still carry their cluster and pool
 * labels, so when the store is missing or empty one label-selector listing tells a first start from
 * a lost store: servers of the fleet's autoscaled pools exist only if a store recorded their claims.
 */
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import type { ServerInventory } from "../reconciler/orphanReclaimer";
import { StoreLostError, storeMissingOrEmpty } from "./storeIntegrity";

/** Names listed in the error before it says how many more there are. */
const NAMES_SHOWN = 5;

/**
 * Throws StoreLostError when the store `file` is missing or empty while the cloud holds servers of
 * `clusterId` in one of `autoscaledPools`; refuses, too, when the cloud cannot be asked then (a
 * start cannot tell a first start from a lost store without it). Asks nothing when the store has data.
 */
export async function assertStoreNotLostInCloud(
  file: string,
  inventory: Pick<ServerInventory, "listClusterServers">,
  clusterId: string,
  autoscaledPools: ReadonlySet<string>,
): Promise<void> {
  if (!storeMissingOrEmpty(file)) return;
  let servers: Awaited<ReturnType<ServerInventory["listClusterServers"]>>;
  try {
    servers = await inventory.listClusterServers(clusterId);
  } catch (error) {
    throw new Error(
      `the store ${file} is missing or empty, and whether Hetzner Cloud holds servers of the autoscaled pools (a lost store) could not be checked: ` +
        `${(error as Error).message}; start again once the Hetzner API answers`,
    );
  }
  const created = servers.filter((server) => autoscaledPools.has(server.labels[OWNERSHIP_LABELS.pool] ?? "")).map((server) => server.name).sort();
  if (created.length === 0) return;
  const shown = created.slice(0, NAMES_SHOWN).join(", ") + (created.length > NAMES_SHOWN ? ` and ${created.length - NAMES_SHOWN} more` : "");
  throw new StoreLostError(file, `Hetzner Cloud holds ${created.length} server(s) of the autoscaled pools of cluster ${clusterId} (${shown})`);
}
