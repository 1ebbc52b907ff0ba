/**
 * Which image each Hetzner Cloud pool boots, per architecture. Pure: the program makes the look-ups
 * `poolImageLookups` lists (hcloud getImage, stacks/fleetProgram.ts) and `resolvePoolImages` turns
 * their answers into each pool's image per architecture, or problems naming the field and the rule.
 * - `imageSelector`: per architecture among the pool's server types, the newest image matching the
 *   selector (getImage withSelector + withArchitecture + mostRecent, terraform-provider-hcloud's
 *   hcloud_image rules); none for a listed type's architecture is refused.
 * - `image` as an id (digits): that image has one architecture; a listed type of the other is refused.
 * - `image` as a name: nothing to look up; Hetzner keeps each system image name for x86 and arm and
 *   the server create picks the one of the type's architecture (as before).
 */
import type { HcloudPool } from "./fleetSpec";

export type HcloudArchitecture = "x86" | "arm";

/**
 * A server type's architecture: Hetzner's Arm64 types are the CAX line (docs.hetzner.com/cloud/servers/overview,
 * "Arm64"), every other line is x86. The scaling API's catalog reads it from the API instead.
 */
export function serverTypeArchitecture(serverType: string): HcloudArchitecture {
  return serverType.startsWith("cax") ? "arm" : "x86";
}

/** Whether `image` is an image id, as hcloud-go's GetForArchitecture tells an id from a name (it parses as an integer). */
function isImageId(image: string): boolean {
  return /^\d+$/.test(image);
}

/** The pool fields the look-ups read. */
export type ImagePool = Pick<HcloudPool, "name" | "mode" | "serverTypes" | "image"> & { readonly imageSelector?: string };

/** One getImage look-up for one pool and architecture. */
export interface PoolImageLookup {
  readonly pool: string;
  /** Index in `nodefleet:pools`, for the field a problem names. */
  readonly poolIndex: number;
  readonly architecture: HcloudArchitecture;
  /** The first listed server type of that architecture, named in a problem. */
  readonly serverType: string;
  /** The getImage arguments (its @pulumi/hcloud names). */
  readonly args:
    { readonly withSelector: string; readonly mostRecent: true; readonly withArchitecture: HcloudArchitecture } | { readonly id: number };
}

/** What a look-up answered: the image found, or the plugin's error. */
export type ImageLookupAnswer = { readonly id: number; readonly architecture: string } | { readonly error: string };

/** Each architecture a pool's listed server types need, with the first type of each, in list order. */
function architecturesOf(serverTypes: readonly string[]): Array<{ architecture: HcloudArchitecture; serverType: string }> {
  const seen = new Map<HcloudArchitecture, string>();
  for (const type of serverTypes) if (!seen.has(serverTypeArchitecture(type))) seen.set(serverTypeArchitecture(type), type);
  return [...seen].map(([architecture, serverType]) => ({ architecture, serverType }));
}

/** The look-ups the pools need: per architecture of a selector pool, and per architecture of an image id. Other pools need none. */
export function poolImageLookups(
  pools: ReadonlyArray<{ readonly provider: string } | (ImagePool & { readonly provider: "hcloud" })>,
): PoolImageLookup[] {
  return pools.flatMap((pool, poolIndex) => {
    if (pool.provider !== "hcloud") return [];
    const p = pool as ImagePool;
    if (p.imageSelector === undefined && !isImageId(p.image)) return [];
    return architecturesOf(p.serverTypes).map(({ architecture, serverType }) => ({
      pool: p.name,
      poolIndex,
      architecture,
      serverType,
      args:
        p.imageSelector !== undefined
          ? { withSelector: p.imageSelector, mostRecent: true as const, withArchitecture: architecture }
          : { id: Number(p.image) },
    }));
  });
}

/** How the hcloud plugin (getImage) and the simulated ones say that nothing matched; any other error is a failed look-up. */
const NO_MATCH = /no image (matches|found)|not[ _]found/i;

/** Per pool that has a selector, the image id (as a string, like a Server's `image`) per architecture. */
export type PoolImages = Readonly<Record<string, Partial<Record<HcloudArchitecture, string>>>>;

export interface ResolvedPoolImages {
  readonly images: PoolImages;
  /** `nodefleet:pools[i].<field>: ...`, one per failed look-up; empty when every pool has its images. */
  readonly problems: readonly string[];
}

/** Turns the answers (same order as `lookups`) into each selector pool's images, or problems naming the field and the rule. */
export function resolvePoolImages(lookups: readonly PoolImageLookup[], answers: readonly ImageLookupAnswer[]): ResolvedPoolImages {
  const images: Record<string, Partial<Record<HcloudArchitecture, string>>> = {};
  const problems: string[] = [];
  lookups.forEach((lookup, i) => {
    const answer = answers[i] ?? { error: "no answer" };
    const prefix = `nodefleet:pools[${lookup.poolIndex}]`;
    const typeWhy = `server type ${lookup.serverType} is ${lookup.architecture === "arm" ? "arm64 (arm)" : "x86"}`;
    const lookupFailed = "error" in answer && !NO_MATCH.test(answer.error);
    if ("withSelector" in lookup.args) {
      const selector = JSON.stringify(lookup.args.withSelector);
      if (lookupFailed) {
        problems.push(`${prefix}.imageSelector: the images matching ${selector} could not be looked up: ${answer.error}`);
      } else if ("error" in answer || answer.architecture !== lookup.architecture) {
        problems.push(
          `${prefix}.imageSelector: no image matches ${selector} for the ${lookup.architecture} architecture (${typeWhy}; each listed server type needs a matching snapshot of its architecture)`,
        );
      } else (images[lookup.pool] ??= {})[lookup.architecture] = String(answer.id);
      return;
    }
    if (lookupFailed) {
      problems.push(`${prefix}.image: image ${lookup.args.id} could not be looked up: ${answer.error}`);
    } else if ("error" in answer) {
      problems.push(`${prefix}.image: no image with id ${lookup.args.id} (an image id must exist in the project)`);
    } else if (answer.architecture !== lookup.architecture) {
      problems.push(
        `${prefix}.image: image ${lookup.args.id} is ${answer.architecture === "arm" ? "arm64 (arm)" : answer.architecture} only, but ${typeWhy} (a server boots only an image of its type's architecture; use imageSelector or a name to have one per architecture)`,
      );
    }
  });
  return { images, problems };
}
