/**
 * The scale-out mode's shared state in one PostgreSQL database: the claims (postgresClaimStore.ts)
 * and the engine runs, operations and guard fingerprints (postgresRunStore.ts) over one connection
 * pool, opened once the schema is up to date (postgresDatabase.ts), and the other replicas' claim
 * changes as they commit (claimChanges.ts).
 */
import type { ClaimRepository } from "./claimRepository";
import { listenToClaimChanges, type ClaimChangeHandlers, type ClaimChangeListener } from "./claimChanges";
import { PostgresClaimStore } from "./postgresClaimStore";
import { openPostgresPool, type PostgresOptions } from "./postgresDatabase";
import { PostgresRunStore } from "./postgresRunStore";
import type { RunStore } from "./runStore";

export interface SharedStores {
  readonly claims: ClaimRepository;
  readonly runs: RunStore;
  /** Hears every replica's claim changes (claimChanges.ts), on a connection of its own beside the pool. */
  listen(handlers: ClaimChangeHandlers): Promise<ClaimChangeListener>;
  /** Ends the pool (after the reconcilers stopped: nothing more is written); again, nothing more. */
  close(): Promise<void>;
}

export async function openPostgresStores(options: PostgresOptions & { readonly now?: () => Date }): Promise<SharedStores> {
  const pool = await openPostgresPool(options);
  // Closed by whoever fails first or stops last (a failed start closes it where it fails): once.
  let ended: Promise<void> | undefined;
  return {
    claims: new PostgresClaimStore(pool, options.now),
    runs: new PostgresRunStore(pool, options.now),
    listen: (handlers) => listenToClaimChanges(options.connectionString, handlers),
    close: () => (ended ??= pool.end()),
  };
}
