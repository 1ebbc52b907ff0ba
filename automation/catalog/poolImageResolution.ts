/**
 * Which image an autoscaled pool's members boot per architecture when the pool names an
 * `imageSelector`: the newest image matching it of that architecture, as the static pools' look-up
 * (components/fleet/poolImages.ts) picks it. Pure apart from `newestImage`, which the service answers
 * with its Hetzner client (HcloudClient.newestImage). An architecture nothing matches, or whose
 * look-up failed, gets a reason instead of an image, so the caller can mark the offerings of that
 * architecture's server types unavailable with it rather than refuse the whole pool.
 */
import type { HcloudArchitecture } from "../../components/fleet/poolImages";
import { errorMessage } from "../../components/shared/errorMessage";

/** What the resolution reads of a pool. */
export interface SelectorPool {
  readonly name: string;
  readonly imageSelector: string;
}

/**
 * The image of one architecture, or why there is none; `lookupFailed` when Hetzner did not answer
 * (as opposed to answering that nothing matches), so a caller may keep the last image it knew.
 */
export type ArchitectureImage = { readonly image: string } | { readonly unavailableReason: string; readonly lookupFailed?: true };

export interface ResolvePoolImagesArgs {
  readonly pool: SelectorPool;
  /** The architectures the pool's server types need (each looked up once). */
  readonly architectures: readonly HcloudArchitecture[];
  /** The newest image matching `selector` of `architecture`, undefined when none does; may throw. */
  readonly newestImage: (selector: string, architecture: HcloudArchitecture) => Promise<{ readonly id: number } | undefined>;
}

/** Per needed architecture, the image id (as a string, the form a template's `image` has) or why there is none. */
export async function resolvePoolImages(args: ResolvePoolImagesArgs): Promise<Map<HcloudArchitecture, ArchitectureImage>> {
  const { pool } = args;
  const resolved = new Map<HcloudArchitecture, ArchitectureImage>();
  for (const architecture of new Set(args.architectures)) {
    let found: { readonly id: number } | undefined;
    try {
      found = await args.newestImage(pool.imageSelector, architecture);
    } catch (error) {
      resolved.set(architecture, {
        unavailableReason: `pool ${pool.name}: imageSelector ${pool.imageSelector} could not be looked up for ${architecture}: ${errorMessage(error)}`,
        lookupFailed: true,
      });
      continue;
    }
    resolved.set(
      architecture,
      found === undefined
        ? {
            unavailableReason: `pool ${pool.name}: no image matches imageSelector ${pool.imageSelector} for the ${architecture} architecture (its server types need a snapshot of it)`,
          }
        : { image: String(found.id) },
    );
  }
  return resolved;
}
