/**
 * The server-type catalog the API serves from: the shipped one, replaced by live Hetzner data
 * (types, prices, per-location availability) when a client is given, refreshed every few minutes.
 * Two requests per refresh: with the default 5 minutes that is 24 requests an hour of Hetzner's
 * 3600.
 */
import type { Logger } from "pino";
import type { HcloudClient } from "../engine/hcloudClient";
import { hcloudCatalog } from "./hcloudCatalog";
import type { OfferingAvailability } from "./offeringAvailability";
import { shippedCatalog, type ServerTypeCatalog } from "./serverTypes";

export class CatalogSource {
  private catalog: ServerTypeCatalog = shippedCatalog();
  private timer: NodeJS.Timeout | undefined;
  private firstRead = false;

  constructor(
    private readonly options: {
      readonly client?: HcloudClient;
      readonly availability?: OfferingAvailability;
      readonly refreshMs?: number;
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
   * Whether offerings can be answered: the shipped catalog at once, a live one after its first read
   * has finished (failed or not). Before that, availability (sold-out types) is not known, and a
   * create the catalog would refuse is accepted only to fail later.
   */
  get settled(): boolean {
    return !this.live || this.firstRead;
  }

  async refresh(): Promise<void> {
    const client = this.options.client;
    if (!client) return;
    try {
      const { serverTypes, unavailable } = await hcloudCatalog(client);
      this.catalog = { source: `Hetzner Cloud API, ${new Date().toISOString()}`, serverTypes };
      this.options.availability?.setProviderUnavailable(unavailable);
    } catch (error) {
      // Keep the last known catalog: stale prices beat refusing every create.
      this.options.logger?.warn({ err: error instanceof Error ? error.message : String(error) }, "refreshing the Hetzner catalog failed");
    } finally {
      this.firstRead = true;
    }
  }

  start(): void {
    if (!this.options.client || this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 5 * 60_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
