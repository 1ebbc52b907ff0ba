/**
 * Which offerings (server type in a location) can be bought right now. Two sources: what the
 * provider reports (refreshed every few minutes when live data is available) and what creates
 * taught us: a create that failed as sold out marks its offering unavailable for a while, so that
 * admission refuses it and `instance-types` steers Karpenter elsewhere (Hetzner types stay sold
 * out in a location for days, so retrying them at once only burns API budget).
 */

export interface UnavailableOffering {
  readonly serverType: string;
  readonly location: string;
  /** Epoch ms after which the offering is tried again. */
  readonly until: number;
  readonly reason: string;
}

const key = (serverType: string, location: string) => `${serverType}@${location}`;

export class OfferingAvailability {
  private readonly learned = new Map<string, UnavailableOffering>();
  /** Offerings the provider last reported as not orderable; undefined until a report arrived. */
  private reported: Set<string> | undefined;

  constructor(
    /** How long a sold-out failure keeps an offering unavailable (default 30 min). */
    private readonly unavailableForMs = 30 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  isAvailable(serverType: string, location: string): boolean {
    const k = key(serverType, location);
    if (this.reported?.has(k)) return false;
    const entry = this.learned.get(k);
    if (!entry) return true;
    if (entry.until <= this.now()) {
      this.learned.delete(k);
      return true;
    }
    return false;
  }

  /** Records a sold-out create. */
  markUnavailable(serverType: string, location: string, reason: string): UnavailableOffering {
    const entry = { serverType, location, until: this.now() + this.unavailableForMs, reason };
    this.learned.set(key(serverType, location), entry);
    return entry;
  }

  /** Replaces the provider's view: the offerings it does not sell at the moment. */
  setProviderUnavailable(offerings: Iterable<{ serverType: string; location: string }>): void {
    this.reported = new Set(Array.from(offerings, (o) => key(o.serverType, o.location)));
  }

  /** Offerings currently marked unavailable by a failed create. */
  learnedUnavailable(): UnavailableOffering[] {
    const now = this.now();
    return [...this.learned.values()].filter((e) => e.until > now);
  }
}
