/**
 * Which offerings (server type in a location) can be bought right now. Two sources: what the
 * provider reports (refreshed every few minutes when live data is available) and what creates
 * taught us: a create that failed in a way the next one would repeat marks its offering, or its
 * whole pool, unavailable for a while, so that admission refuses it before any engine run and
 * `instance-types` steers Karpenter elsewhere. Sold out keeps an offering unavailable longest
 * (Hetzner types stay sold out in a location for days); a quota, an unusable image or a full
 * network or placement group for a shorter period (someone may raise the quota or fix the image),
 * as the AWS provider's unavailable-offerings cache does for capacity errors (aws/karpenter-provider-aws
 * pkg/cache/unavailableofferings.go).
 */

/** Why a failed create made something unavailable (failureClass.ts LaunchBackoffKind). */
export type UnavailableKind = "soldOut" | "quota" | "image" | "poolLimit";

export interface UnavailableOffering {
  readonly serverType: string;
  readonly location: string;
  /** Epoch ms after which the offering is tried again. */
  readonly until: number;
  readonly reason: string;
  readonly kind: UnavailableKind;
}

/** A pool every offering of which is unavailable (its image, network or placement group). */
export interface UnavailablePool {
  readonly clusterId: string;
  readonly pool: string;
  readonly until: number;
  readonly reason: string;
  readonly kind: UnavailableKind;
}

/** The pool an offering is asked for in, for pool-wide marks. */
export interface PoolRef {
  readonly clusterId: string;
  readonly pool: string;
}

const key = (serverType: string, location: string) => `${serverType}@${location}`;
const poolKey = (clusterId: string, pool: string) => `${clusterId}/${pool}`;

/** What the provider's own report says of an offering it does not sell now. */
export const PROVIDER_UNAVAILABLE = "the provider does not offer this server type in this location at the moment";

export class OfferingAvailability {
  private readonly learned = new Map<string, UnavailableOffering>();
  private readonly pools = new Map<string, UnavailablePool>();
  /** Offerings the provider last reported as not orderable; undefined until a report arrived. */
  private reported: Set<string> | undefined;

  constructor(
    /** How long a sold-out failure keeps an offering unavailable (default 30 min). */
    private readonly unavailableForMs = 30 * 60_000,
    private readonly now: () => number = Date.now,
    /** How long any other backoff (quota, image, full pool) lasts (default 5 min). */
    private readonly backoffForMs = 5 * 60_000,
  ) {}

  /** How long a failure of this kind keeps what it marked unavailable. */
  periodOf(kind: UnavailableKind): number {
    return kind === "soldOut" ? this.unavailableForMs : this.backoffForMs;
  }

  isAvailable(serverType: string, location: string, pool?: PoolRef): boolean {
    return this.unavailableReason(serverType, location, pool) === undefined;
  }

  /** Why the offering cannot be had now (in `pool`, when given), or undefined when it can. */
  unavailableReason(serverType: string, location: string, pool?: PoolRef): string | undefined {
    if (this.reported?.has(key(serverType, location))) return PROVIDER_UNAVAILABLE;
    return this.backoff(serverType, location, pool)?.reason;
  }

  /**
   * The mark a failed create left on the offering (or on `pool`, when given) and still in force, or
   * undefined: what backs the offering off, as opposed to the provider not selling it.
   */
  backoff(
    serverType: string,
    location: string,
    pool?: PoolRef,
  ): { readonly reason: string; readonly until: number; readonly kind: UnavailableKind } | undefined {
    const blocked = pool && this.poolUnavailable(pool.clusterId, pool.pool);
    if (blocked) return blocked;
    const k = key(serverType, location);
    const entry = this.learned.get(k);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.learned.delete(k);
      return undefined;
    }
    return entry;
  }

  /** The pool-wide mark in force, or undefined. */
  poolUnavailable(clusterId: string, pool: string): UnavailablePool | undefined {
    const k = poolKey(clusterId, pool);
    const entry = this.pools.get(k);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.pools.delete(k);
      return undefined;
    }
    return entry;
  }

  /** Records a create that failed for its offering (sold out by default). */
  markUnavailable(serverType: string, location: string, reason: string, kind: UnavailableKind = "soldOut"): UnavailableOffering {
    const entry = { serverType, location, until: this.now() + this.periodOf(kind), reason, kind };
    this.learned.set(key(serverType, location), entry);
    return entry;
  }

  /** Records a create that failed for its whole pool. */
  markPoolUnavailable(clusterId: string, pool: string, reason: string, kind: UnavailableKind): UnavailablePool {
    const entry = { clusterId, pool, until: this.now() + this.periodOf(kind), reason, kind };
    this.pools.set(poolKey(clusterId, pool), entry);
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
