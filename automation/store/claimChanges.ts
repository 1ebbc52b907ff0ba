/**
 * Claim changes between replicas sharing one PostgreSQL database: a trigger announces every claim
 * insert and status change on the `nodefleet_claims` channel at its commit (postgresDatabase.ts,
 * migration 3), and each replica listens on a connection of its own. A create admitted by a replica
 * that dies before running it is then run by another, and a request waiting on a claim
 * (`waitSeconds`) hears of the run that settled it whichever replica ran it.
 */
import pg from "pg";
import { CLAIM_STATUSES, type ClaimStatus } from "./claimStore";

export const CLAIM_CHANGES_CHANNEL = "nodefleet_claims";

export interface ClaimChange {
  readonly clusterId: string;
  /** The API stack shard the claim belongs to. */
  readonly shard: string;
  readonly nodeId: string;
  /** Its status after the change. */
  readonly status: ClaimStatus;
}

export interface ClaimChangeHandlers {
  readonly onChange: (change: ClaimChange) => void;
  /**
   * The connection was lost and is back: changes meanwhile were not heard, so whatever depends on
   * them looks again (also called once at the first connection, as nothing was heard before it).
   */
  readonly onListening: () => void;
  /** A lost connection, before the next attempt (the listener keeps trying, backing off up to 30 s). */
  readonly onLost?: (error: Error) => void;
}

export interface ClaimChangeListener {
  close(): Promise<void>;
}

/** The channel's payload, or undefined for one this nodefleet does not read (a newer replica's). */
export function parseClaimChange(payload: string | undefined): ClaimChange | undefined {
  try {
    const value = JSON.parse(payload ?? "") as Partial<Record<keyof ClaimChange, unknown>>;
    const { clusterId, shard, nodeId, status } = value;
    if (typeof clusterId !== "string" || typeof shard !== "string" || typeof nodeId !== "string") return undefined;
    if (!CLAIM_STATUSES.includes(status as ClaimStatus)) return undefined;
    return { clusterId, shard, nodeId, status: status as ClaimStatus };
  } catch {
    return undefined;
  }
}

const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 30_000;

/** Listens on a connection of its own (outside the pool, whose connections come and go), reconnecting after a loss. */
export async function listenToClaimChanges(connectionString: string, handlers: ClaimChangeHandlers): Promise<ClaimChangeListener> {
  let closed = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let delayMs = FIRST_RETRY_MS;

  const connect = async (): Promise<void> => {
    const next = new pg.Client({ connectionString });
    next.on("notification", (message) => {
      if (message.channel !== CLAIM_CHANGES_CHANNEL) return;
      const change = parseClaimChange(message.payload);
      if (change) handlers.onChange(change);
    });
    next.on("error", (error) => lost(next, error));
    next.on("end", () => lost(next, new Error("the connection ended")));
    try {
      await next.connect();
      await next.query(`LISTEN ${CLAIM_CHANGES_CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      throw error;
    }
    if (closed) return void (await next.end().catch(() => undefined));
    client = next;
    delayMs = FIRST_RETRY_MS;
    handlers.onListening();
  };

  const lost = (which: pg.Client, error: Error) => {
    if (closed || client !== which) return;
    client = undefined;
    which.end().catch(() => undefined);
    handlers.onLost?.(error);
    reconnectLater();
  };

  const reconnectLater = () => {
    if (closed) return;
    retry = setTimeout(() => {
      connect().catch((error: unknown) => {
        handlers.onLost?.(error instanceof Error ? error : new Error(String(error)));
        delayMs = Math.min(delayMs * 2, LONGEST_RETRY_MS);
        reconnectLater();
      });
    }, delayMs);
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      await last?.end().catch(() => undefined);
    },
  };
}
