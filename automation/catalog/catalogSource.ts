/**
 * The server-type catalog the API serves from: the shipped one, replaced by live Hetzner data
 * (types, prices, per-location availability) when a client is given, refreshed every few minutes.
 * Two requests per refresh: with the default 5 minutes that is 24 requests an hour of Hetzner's
 * 3600. Nothing waits on a read: until the first one succeeds, and after one fails, the shipped or
 * last-known catalog is served and `staleness()` says so (readiness names it).
 */
import type { Logger } from "pino";
import type { HcloudClient } from "../hcloud/hcloudClient";
import { hcloudCatalog } from "./hcloudCatalog";
import type { OfferingAvailability } from "./offeringAvailability";
import { shippedCatalog, type ServerTypeCatalog } from "./serverTypes";
import { errorMessage } from "../../components/shared/errorMessage";

/** Why the catalog served is not Hetzner's current one, for /readyz. */
export interface CatalogStaleness {
  readonly stale: true;
  /** What is served instead: the shipped file, or the last successful read and when. */
  readonly serving: string;
  readonly reason: string;
  /** Since when no read has succeeded (the service's start, or the first failure after a success). */
  readonly since: string;
}

export class CatalogSource {
  private catalog: ServerTypeCatalog = shippedCatalog();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private lastSuccess: string | undefined;
  private failure: { reason: string; since: string; attempts: number } | undefined;
  private readonly createdAt = new Date().toISOString();

  constructor(
    private readonly options: {
      readonly client?: HcloudClient;
      readonly availability?: OfferingAvailability;
      readonly refreshMs?: number;
      /** First wait before a failed read is tried again, doubling up to refreshMs (default 30 s). */
      readonly retryMs?: number;
      readonly logger?: Logger;
    } = {},
  ) {}

  current(): ServerTypeCatalog {
    return this.catalog;
  }

  get live(): boolean {
    return this.options.client !== undefined;
  }

  /**
   * Undefined while the catalog is Hetzner's current one (or no live data is configured, so the
   * shipped catalog is the intended one); otherwise what is served and why.
   */
  staleness(): CatalogStaleness | undefined {
    if (!this.live || (this.lastSuccess && !this.failure)) return undefined;
    const serving = this.lastSuccess
      ? `the last read of Hetzner's server types, ${this.lastSuccess}`
      : "the shipped catalog (hcloudCatalog.json): no availability known, sold-out types look available";
    return {
      stale: true,
      serving,
      reason: this.failure
        ? `reading Hetzner's server types failed: ${this.failure.reason}; trying again`
        : "the first read of Hetzner's server types has not finished",
      since: this.failure?.since ?? this.createdAt,
    };
  }

  async refresh(): Promise<void> {
    const client = this.options.client;
    if (!client) return;
    try {
      const { serverTypes, unavailable, primaryIpv4 } = await hcloudCatalog(client);
      this.lastSuccess = new Date().toISOString();
      this.catalog = { source: `Hetzner Cloud API, ${this.lastSuccess}`, serverTypes, primaryIpv4 };
      this.options.availability?.setProviderUnavailable(unavailable);
      if (this.failure) this.options.logger?.info({ attempts: this.failure.attempts }, "the Hetzner catalog is current again");
      this.failure = undefined;
    } catch (error) {
      // Keep the last known catalog: stale prices beat refusing every create.
      const reason = errorMessage(error);
      this.failure = { reason, since: this.failure?.since ?? new Date().toISOString(), attempts: (this.failure?.attempts ?? 0) + 1 };
      this.options.logger?.warn(
        { err: reason, attempt: this.failure.attempts },
        "refreshing the Hetzner catalog failed; serving the last known catalog, marked stale",
      );
    }
  }

  start(): void {
    if (!this.options.client || this.running) return;
    this.running = true;
    void this.cycle();
  }

  /** Reads, then waits the refresh interval, or less after a failure (backoff), and reads again. */
  private async cycle(): Promise<void> {
    await this.refresh();
    if (!this.running) return;
    const refreshMs = this.options.refreshMs ?? 5 * 60_000;
    const retryMs = this.options.retryMs ?? 30_000;
    const wait = this.failure ? Math.min(refreshMs, retryMs * 2 ** Math.min(this.failure.attempts - 1, 20)) : refreshMs;
    this.timer = setTimeout(() => void this.cycle(), wait);
    this.timer.unref();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
