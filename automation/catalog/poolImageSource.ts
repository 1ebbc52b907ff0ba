/**
 * The images the autoscaled pools with `imageSelector` boot, per architecture, as the scaling API
 * last resolved them (poolImageResolution.ts, one GET /images per architecture). Admission resolves
 * afresh before it admits, so a new member always gets the newest matching snapshot; node and
 * instance-type answers use the last resolution, refreshed when older than `refreshMs`, so a newer
 * snapshot reaches the members' drift (ImageDrift) without a create. For the members already
 * running, an architecture whose look-up failed or now matches nothing keeps its last known image:
 * a Hetzner outage or a deleted snapshot must not drift (and so replace) every node.
 */
import { type HcloudArchitecture, serverTypeArchitecture } from "../../components/fleet/poolImages";
import { type ArchitectureImage, resolvePoolImages, type SelectorPool } from "./poolImageResolution";

/** One architecture's resolution per architecture the pool's server types need. */
export type PoolImages = ReadonlyMap<HcloudArchitecture, ArchitectureImage>;

/** What the source reads of a pool. */
export type ImageSelectorPool = SelectorPool & { readonly serverTypes: readonly string[] };

export interface PoolImageSourceOptions {
  /** The Hetzner look-up (HcloudClient.newestImage); without one (no HCLOUD_TOKEN) nothing resolves. */
  readonly newestImage?: (selector: string, architecture: HcloudArchitecture) => Promise<{ readonly id: number } | undefined>;
  /** How old the last resolution may be before a node or instance-type answer refreshes it (default 60 s). */
  readonly refreshMs?: number;
  readonly now?: () => number;
}

const DEFAULT_REFRESH_MS = 60_000;

const noClient = async (): Promise<never> => {
  throw new Error("the service has no Hetzner API token (HCLOUD_TOKEN) to look images up with");
};

/** Same images and reasons: keeping the earlier object keeps the caches keyed by it (memberSnapshot.ts). */
function sameImages(a: PoolImages, b: PoolImages): boolean {
  return a.size === b.size && [...a].every(([arch, answer]) => JSON.stringify(b.get(arch)) === JSON.stringify(answer));
}

/** Per architecture the fresh answer, except where `keep` says the last known image stays. */
function merged(previous: PoolImages | undefined, fresh: PoolImages, keep: (answer: ArchitectureImage) => boolean): PoolImages {
  const out = new Map<HcloudArchitecture, ArchitectureImage>();
  for (const [arch, answer] of fresh) {
    const before = previous?.get(arch);
    out.set(arch, !("image" in answer) && keep(answer) && before !== undefined && "image" in before ? before : answer);
  }
  return out;
}

export class PoolImageSource {
  private readonly known = new Map<string, { images: PoolImages; at: number }>();
  private readonly pending = new Map<string, Promise<PoolImages>>();
  private changes = 0;

  constructor(private readonly options: PoolImageSourceOptions = {}) {}

  /** Counts the changes of any stored resolution: answers built from an older count are stale. */
  get version(): number {
    return this.changes;
  }

  /**
   * Resolves the pool's selector now, for admission: per architecture the newest matching image, or
   * why there is none; only a failed look-up falls back to the last known image (nothing matching is
   * an answer, and admits no member of that architecture).
   */
  async resolve(pool: ImageSelectorPool): Promise<PoolImages> {
    const key = keyOf(pool);
    const fresh = await this.lookUp(pool, key);
    return merged(this.known.get(key)?.images, fresh, (answer) => "lookupFailed" in answer);
  }

  /** The last resolution of the pool, undefined before the first (refreshStale makes one). */
  last(pool: ImageSelectorPool): PoolImages | undefined {
    return this.known.get(keyOf(pool))?.images;
  }

  /** Resolves each pool whose last resolution is missing or older than `refreshMs`, concurrently. */
  async refreshStale(pools: readonly ImageSelectorPool[]): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    const refreshMs = this.options.refreshMs ?? DEFAULT_REFRESH_MS;
    await Promise.all(
      pools.map(async (pool) => {
        const key = keyOf(pool);
        const known = this.known.get(key);
        if (known === undefined || now - known.at >= refreshMs) await this.lookUp(pool, key);
      }),
    );
  }

  /** One look-up per pool at a time (concurrent callers share it); stores what running members keep. */
  private lookUp(pool: ImageSelectorPool, key: string): Promise<PoolImages> {
    let running = this.pending.get(key);
    if (running) return running;
    running = (async () => {
      try {
        const fresh = await resolvePoolImages({
          pool,
          architectures: pool.serverTypes.map(serverTypeArchitecture),
          newestImage: this.options.newestImage ?? noClient,
        });
        const previous = this.known.get(key)?.images;
        const stored = merged(previous, fresh, () => true);
        const unchanged = previous !== undefined && sameImages(previous, stored);
        if (!unchanged) this.changes += 1;
        this.known.set(key, { images: unchanged ? previous : stored, at: (this.options.now ?? Date.now)() });
        return fresh;
      } finally {
        this.pending.delete(key);
      }
    })();
    this.pending.set(key, running);
    return running;
  }
}

/** A pool's resolution depends on its name, selector and the architectures its types need. */
function keyOf(pool: ImageSelectorPool): string {
  return JSON.stringify([pool.name, pool.imageSelector, [...new Set(pool.serverTypes.map(serverTypeArchitecture))].sort()]);
}

/** The reason an architecture's members cannot be admitted, or undefined when it has an image (or the pool no selector). */
export function imageUnavailableReason(images: PoolImages | undefined, serverType: string): string | undefined {
  if (images === undefined) return undefined;
  const answer = images.get(serverTypeArchitecture(serverType));
  if (answer === undefined) return `no image was resolved for ${serverType}'s architecture`;
  return "image" in answer ? undefined : answer.unavailableReason;
}
